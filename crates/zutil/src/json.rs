//! `-j` output: the JSON that `zpool` and `zfs` print, as OpenZFS 2.3 prints it.
//!
//! Counterpart: `nvlist_print_json` (lib/libnvpair/libnvpair_json.c), `zcmd_print_json`
//! and `zprop_nvlist_one_property` (lib/libzfs/libzfs_util.c), `zpool_json_schema`,
//! `nice_num_str_nvlist` (cmd/zpool/zpool_main.c) and `zfs_json_schema`
//! (cmd/zfs/zfs_main.c).
//!
//! Theory: OpenZFS builds an nvlist and prints it as compact JSON on one line, followed
//! by a newline. An nvlist keeps its pairs in insertion order and, being `NV_UNIQUE_NAME`,
//! replaces a pair added again by removing the old one and appending the new one;
//! [`Json::insert`] does the same, so keys come out in OpenZFS's order. Strings are
//! 7-bit ASCII: `"`, `\`, `\n`, `\r`, `\f`, `\t`, `\b` are backslash-escaped, other control
//! characters and every character of the Basic Multilingual Plane above 0x7f are
//! written `\uXXXX`; characters beyond the BMP are dropped (as libnvpair drops them).
//! Numbers are strings unless `--json-int` was given ([`nice_number`]).
//!
//! Every document starts with `"output_version": {"command": "zpool status",
//! "vers_major": 0, "vers_minor": 1}` ([`output_version`]); 2.3 prints version 0.1 for
//! every command. A property is `{"value": V, "source": {"type": T, "data": D}}`
//! ([`property`]).
//!
//! [`parse`] reads JSON back (tests, and scripts of our own); it accepts any JSON text,
//! bounded in depth, and never panics on bad input.

use crate::nicenum::nicenum;
use std::fmt::Write as _;

/// One JSON value; objects keep their keys in insertion order.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// Every number OpenZFS prints is an unsigned integer (`%llu`, `%u`).
    Number(u64),
    /// A number read back that is not an unsigned integer (negative or fractional).
    Float(f64),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn object() -> Json {
        Json::Object(Vec::new())
    }

    pub fn string(text: impl Into<String>) -> Json {
        Json::String(text.into())
    }

    /// Adds `key` at the end; a key already there is removed first (`NV_UNIQUE_NAME`).
    pub fn insert(&mut self, key: &str, value: Json) {
        if let Json::Object(pairs) = self {
            pairs.retain(|(k, _)| k != key);
            pairs.push((key.to_string(), value));
        } else {
            debug_assert!(false, "insert into a JSON value that is not an object");
        }
    }

    /// The value under `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Mutable access to the value under `key` of an object.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Object(pairs) => pairs.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// The keys of an object, in order (empty for anything else).
    pub fn keys(&self) -> Vec<&str> {
        match self {
            Json::Object(pairs) => pairs.iter().map(|(k, _)| k.as_str()).collect(),
            _ => Vec::new(),
        }
    }

    pub fn is_empty_object(&self) -> bool {
        matches!(self, Json::Object(pairs) if pairs.is_empty())
    }

    /// The compact text `nvlist_print_json` writes (no trailing newline).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write_into(&mut out);
        out
    }

    fn write_into(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => {
                let _ = write!(out, "{n}");
            }
            Json::Float(f) => {
                let _ = write!(out, "{f:.6}");
            }
            Json::String(s) => write_string(out, s),
            Json::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    item.write_into(out);
                }
                out.push(']');
            }
            Json::Object(pairs) => {
                out.push('{');
                for (index, (key, value)) in pairs.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write_string(out, key);
                    out.push(':');
                    value.write_into(out);
                }
                out.push('}');
            }
        }
    }
}

/// `nvlist_print_json_string`.
fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            '\u{c}' => out.push_str("\\f"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            c if (c as u32) <= 0x1f || ((c as u32) > 0x7f && (c as u32) <= 0xffff) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) <= 0x7f => out.push(c),
            // Beyond the BMP: libnvpair drops what it cannot represent.
            _ => {}
        }
    }
    out.push('"');
}

/// `zpool_json_schema` / `zfs_json_schema`: the document every `-j` output starts from,
/// for `command` ("zpool status", "zfs list", ...).
pub fn output_version(command: &str) -> Json {
    let mut version = Json::object();
    version.insert("command", Json::string(command));
    version.insert("vers_major", Json::Number(0));
    version.insert("vers_minor", Json::Number(1));
    let mut document = Json::object();
    document.insert("output_version", version);
    document
}

/// Where a property's value comes from (`zprop_source_t`), with the data JSON prints
/// beside it: the dataset inherited from, or the received value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PropSource {
    None,
    Default,
    Local,
    Temporary,
    Inherited(String),
    Received(Option<String>),
}

impl PropSource {
    /// The SOURCE column's text as `zfs get`/`zpool get` print it: `-`, `default`,
    /// `local`, `temporary`, `inherited from NAME`, `received`.
    pub fn from_column(text: &str) -> PropSource {
        match text {
            "default" => PropSource::Default,
            "local" => PropSource::Local,
            "temporary" => PropSource::Temporary,
            "received" => PropSource::Received(None),
            other => match other.strip_prefix("inherited from ") {
                Some(from) => PropSource::Inherited(from.to_string()),
                None => PropSource::None,
            },
        }
    }

    fn type_and_data(&self) -> (&'static str, String) {
        match self {
            PropSource::None => ("NONE", "-".to_string()),
            PropSource::Default => ("DEFAULT", "-".to_string()),
            PropSource::Local => ("LOCAL", "-".to_string()),
            PropSource::Temporary => ("TEMPORARY", "-".to_string()),
            PropSource::Inherited(from) => ("INHERITED", from.clone()),
            PropSource::Received(value) => {
                ("RECEIVED", value.clone().unwrap_or_else(|| "-".to_string()))
            }
        }
    }
}

/// `zprop_nvlist_one_property`: `{"value": V, "source": {"type": T, "data": D}}`. With
/// `--json-int`, a value made of digits only (the empty string included, as `strspn`
/// counts it) is printed as a number.
pub fn property(value: &str, source: &PropSource, as_int: bool) -> Json {
    let all_digits = value.bytes().all(|b| b.is_ascii_digit());
    let mut prop = Json::object();
    if as_int && all_digits {
        // sscanf("%lld") of an empty or overlong string: OpenZFS leaves 0 / saturates.
        prop.insert("value", Json::Number(value.parse().unwrap_or(0)));
    } else {
        prop.insert("value", Json::string(value));
    }
    let (kind, data) = source.type_and_data();
    let mut source_object = Json::object();
    source_object.insert("type", Json::string(kind));
    source_object.insert("data", Json::string(data));
    prop.insert("source", source_object);
    prop
}

/// How `nice_num_str_nvlist` words a number that is not printed exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NiceFormat {
    /// `ZFS_NICENUM_1024` and `ZFS_NICENUM_BYTES` print alike ("1.50K").
    Number,
    /// `ZFS_NICE_TIMESTAMP`: the date in the C locale's `date(1)` format, `-` for 0.
    Timestamp,
}

/// `nice_num_str_nvlist`: a number as JSON — itself with `--json-int`, its decimal
/// digits when `literal` (`-p`), else nicenum's words or a date.
pub fn nice_number(value: u64, literal: bool, as_int: bool, format: NiceFormat) -> Json {
    if as_int {
        return Json::Number(value);
    }
    if literal {
        return Json::String(value.to_string());
    }
    Json::String(match format {
        NiceFormat::Number => nicenum(value),
        NiceFormat::Timestamp => timestamp_text(value),
    })
}

/// `format_timestamp`: `-` for 0, else `strftime(nl_langinfo(_DATE_FMT))` in the C
/// locale ("Sat Nov 28 06:30:00 UTC 2026") in local time.
pub fn timestamp_text(epoch_secs: u64) -> String {
    if epoch_secs == 0 {
        return "-".to_string();
    }
    crate::nicenum::date_text(i64::try_from(epoch_secs).unwrap_or(i64::MAX))
}

/// Deepest nesting [`parse`] accepts; OpenZFS's documents are a few levels deep.
pub const PARSE_DEPTH_MAX: usize = 128;

/// Why [`parse`] refused a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub offset: usize,
    pub what: &'static str,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid JSON at byte {}: {}", self.offset, self.what)
    }
}

impl std::error::Error for ParseError {}

/// Reads one JSON document (surrounding white space allowed).
pub fn parse(text: &str) -> Result<Json, ParseError> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        at: 0,
    };
    let value = parser.value(0)?;
    parser.skip_space();
    if parser.at != parser.bytes.len() {
        return Err(parser.error("trailing characters"));
    }
    Ok(value)
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &'static str) -> ParseError {
        ParseError {
            offset: self.at,
            what,
        }
    }

    fn skip_space(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn expect(&mut self, word: &str) -> Result<(), ParseError> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(())
        } else {
            Err(self.error("unknown word"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, ParseError> {
        if depth > PARSE_DEPTH_MAX {
            return Err(self.error("nested too deeply"));
        }
        self.skip_space();
        match self.bytes.get(self.at) {
            None => Err(self.error("unexpected end")),
            Some(b'{') => {
                self.at += 1;
                let mut pairs = Vec::new();
                self.skip_space();
                if self.bytes.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return Ok(Json::Object(pairs));
                }
                loop {
                    self.skip_space();
                    if self.bytes.get(self.at) != Some(&b'"') {
                        return Err(self.error("expected a key"));
                    }
                    let key = self.string()?;
                    self.skip_space();
                    if self.bytes.get(self.at) != Some(&b':') {
                        return Err(self.error("expected ':'"));
                    }
                    self.at += 1;
                    let value = self.value(depth + 1)?;
                    pairs.push((key, value));
                    self.skip_space();
                    match self.bytes.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(Json::Object(pairs));
                        }
                        _ => return Err(self.error("expected ',' or '}'")),
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.skip_space();
                if self.bytes.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.skip_space();
                    match self.bytes.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(Json::Array(items));
                        }
                        _ => return Err(self.error("expected ',' or ']'")),
                    }
                }
            }
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b't') => self.expect("true").map(|_| Json::Bool(true)),
            Some(b'f') => self.expect("false").map(|_| Json::Bool(false)),
            Some(b'n') => self.expect("null").map(|_| Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("unexpected character")),
        }
    }

    fn number(&mut self) -> Result<Json, ParseError> {
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
        {
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.bytes[start..self.at])
            .map_err(|_| self.error("bad number"))?;
        if let Ok(n) = text.parse::<u64>() {
            return Ok(Json::Number(n));
        }
        text.parse::<f64>()
            .map(Json::Float)
            .map_err(|_| self.error("bad number"))
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let digits = self
            .bytes
            .get(self.at..self.at + 4)
            .ok_or_else(|| self.error("short \\u escape"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.error("bad \\u escape"))?;
        let value = u32::from_str_radix(text, 16).map_err(|_| self.error("bad \\u escape"))?;
        self.at += 4;
        Ok(value)
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.at += 1; // the opening quote
        let mut out = String::new();
        loop {
            let Some(&byte) = self.bytes.get(self.at) else {
                return Err(self.error("unterminated string"));
            };
            self.at += 1;
            match byte {
                b'"' => return Ok(out),
                b'\\' => {
                    let Some(&escape) = self.bytes.get(self.at) else {
                        return Err(self.error("unterminated escape"));
                    };
                    self.at += 1;
                    match escape {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut code = self.hex4()?;
                            if (0xd800..0xdc00).contains(&code)
                                && self.bytes[self.at..].starts_with(b"\\u")
                            {
                                self.at += 2;
                                let low = self.hex4()?;
                                code = 0x10000
                                    + ((code - 0xd800) << 10)
                                    + (low.wrapping_sub(0xdc00) & 0x3ff);
                            }
                            out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                        }
                        _ => return Err(self.error("unknown escape")),
                    }
                }
                b if b < 0x20 => return Err(self.error("control character in string")),
                _ => {
                    // Copy one whole UTF-8 character.
                    let start = self.at - 1;
                    let mut end = self.at;
                    while self.bytes.get(end).is_some_and(|b| b & 0xc0 == 0x80) {
                        end += 1;
                    }
                    let text = std::str::from_utf8(&self.bytes[start..end])
                        .map_err(|_| self.error("invalid UTF-8"))?;
                    out.push_str(text);
                    self.at = end;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
