use super::value::parse_value_named;
use super::*;
use zetta_zutil::nicenum::TimeZone;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

fn fs_set() -> SetTarget {
    SetTarget {
        object: DatasetType::Filesystem,
        creating: false,
        volblocksize_bytes: None,
    }
}

fn error_text(prop: ZfsProp, input: &str) -> String {
    parse_value(prop, input).unwrap_err().to_string()
}

fn set_error(name: &str, input: &str, target: SetTarget) -> String {
    validate_set(name, input, target).unwrap_err().to_string()
}

// The table is indexed by the enum; a row out of place would give one property another's
// rules, so every row must sit at its own discriminant.
#[test]
fn table_rows_are_in_enum_order() {
    assert_eq!(TABLE.len(), ZfsProp::COUNT);
    for (position, desc) in TABLE.iter().enumerate() {
        assert_eq!(desc.prop as usize, position, "{}", desc.name);
        assert_eq!(ZfsProp::from_name(desc.name), Some(desc.prop));
    }
}

// Defaults must be values their own property accepts, or `zfs get` would print a word that
// `zfs set` refuses (mlslabel aside: Linux refuses every mlslabel).
#[test]
fn index_defaults_are_canonical_words() {
    for desc in TABLE.iter() {
        if let (PropType::Index(table), DefaultValue::Index(word)) = (desc.kind, desc.default) {
            assert!(
                table.iter().any(|(_, canonical)| *canonical == word),
                "{}",
                desc.name
            );
        }
    }
}

// Aliases are the lower-cased column headers, exactly as zprop_name_to_prop matches them;
// upper case is not accepted.
#[test]
fn aliases_resolve_to_their_property() {
    let pairs = [
        ("avail", ZfsProp::Available),
        ("refer", ZfsProp::Referenced),
        ("lused", ZfsProp::Logicalused),
        ("lrefer", ZfsProp::Logicalreferenced),
        ("usedsnap", ZfsProp::Usedbysnapshots),
        ("usedds", ZfsProp::Usedbydataset),
        ("usedchild", ZfsProp::Usedbychildren),
        ("usedrefreserv", ZfsProp::Usedbyrefreservation),
        ("ratio", ZfsProp::CompressRatio),
        ("refratio", ZfsProp::Refcompressratio),
        ("recsize", ZfsProp::Recordsize),
        ("compress", ZfsProp::Compression),
        ("volblock", ZfsProp::Volblocksize),
        ("rdonly", ZfsProp::Readonly),
        ("reserv", ZfsProp::Reservation),
        ("refreserv", ZfsProp::Refreservation),
    ];
    for (alias, prop) in pairs {
        assert_eq!(ZfsProp::from_name(alias), Some(prop), "{alias}");
    }
    assert_eq!(ZfsProp::from_name("AVAIL"), None);
    assert_eq!(ZfsProp::from_name("bogus"), None);
}

// zfs list headers and alignment come from the table: numbers right, strings left.
#[test]
fn columns_and_alignment() {
    let expected = [
        (ZfsProp::Used, "USED", true),
        (ZfsProp::Available, "AVAIL", true),
        (ZfsProp::Referenced, "REFER", true),
        (ZfsProp::Mountpoint, "MOUNTPOINT", false),
        (ZfsProp::CompressRatio, "RATIO", true),
        (ZfsProp::Name, "NAME", false),
        (ZfsProp::Creation, "CREATION", false),
        (ZfsProp::Guid, "GUID", true),
        (ZfsProp::Compression, "COMPRESS", false),
    ];
    for (prop, column, right) in expected {
        assert_eq!(prop.desc().column, column);
        assert_eq!(prop.desc().align_right, right, "{column}");
    }
}

// Attributes drive zfs set/inherit; spot-check each class against zfs_prop.c.
#[test]
fn attributes_match_openzfs() {
    assert!(ZfsProp::Recordsize.is_inheritable());
    assert!(!ZfsProp::Quota.is_inheritable());
    assert!(!ZfsProp::Canmount.is_inheritable());
    assert!(ZfsProp::Used.is_readonly());
    assert!(ZfsProp::Casesensitivity.is_create_only() && ZfsProp::Casesensitivity.is_inheritable());
    assert!(ZfsProp::Volblocksize.is_create_only());
    assert!(ZfsProp::Keyformat.is_create_only() && !ZfsProp::Keyformat.is_inheritable());
    assert!(!ZfsProp::Volsize.is_readonly());
}

// Which properties a snapshot shows depends on its head (volsize only for volume snapshots).
#[test]
fn applicability_with_head_check() {
    use DatasetType::*;
    assert!(ZfsProp::Volsize.applies_to(Snapshot, Some(Volume)));
    assert!(!ZfsProp::Volsize.applies_to(Snapshot, Some(Filesystem)));
    assert!(ZfsProp::Exec.applies_to(Snapshot, Some(Filesystem)));
    assert!(!ZfsProp::Exec.applies_to(Snapshot, Some(Volume)));
    assert!(ZfsProp::Userrefs.applies_to(Snapshot, Some(Volume)));
    assert!(!ZfsProp::Mountpoint.applies_to(Volume, None));
    assert!(ZfsProp::Guid.applies_to(Bookmark, None));
    assert!(!ZfsProp::Used.applies_to(Bookmark, None));
}

// The zfs get all order is the zfs_prop_t order with hidden `name` left out; scripts diff
// whole `zfs get all` outputs, so the golden list must match the iterator exactly.
#[test]
fn get_all_order_golden() {
    let names: Vec<&str> = zfs_get_all_order().map(ZfsProp::name).collect();
    assert_eq!(names, ZFS_GET_ALL_ORDER);
    assert_eq!(
        &names[..12],
        [
            "type",
            "creation",
            "used",
            "available",
            "referenced",
            "compressratio",
            "mounted",
            "origin",
            "quota",
            "reservation",
            "volsize",
            "volblocksize"
        ]
    );
    // What a plain filesystem prints, in order (the first rows of a real `zfs get all`).
    let filesystem: Vec<&str> = zfs_get_all_order()
        .filter(|prop| prop.shown_by_get_all(DatasetType::Filesystem, None))
        .map(ZfsProp::name)
        .take(14)
        .collect();
    assert_eq!(
        filesystem,
        [
            "type",
            "creation",
            "used",
            "available",
            "referenced",
            "compressratio",
            "mounted",
            "origin",
            "quota",
            "reservation",
            "recordsize",
            "mountpoint",
            "sharenfs",
            "checksum"
        ]
    );
}

// zfs_nicestrtonum: suffixes in any case with optional B/iB; fractions truncate.
#[test]
fn nicestrtonum_accepts_openzfs_spellings() {
    let cases = [
        ("0", 0),
        ("512", 512),
        ("512b", 512),
        ("128K", 128 * KIB),
        ("128k", 128 * KIB),
        ("128KB", 128 * KIB),
        ("128kib", 128 * KIB),
        ("1G", GIB),
        ("1.5G", GIB + GIB / 2),
        ("1.5m", MIB + MIB / 2),
        (".5K", 512),
        ("1.", 1),
        ("1e", 1u64 << 60),
        ("1.5e3", 1500),
    ];
    for (text, expected) in cases {
        assert_eq!(nicestrtonum(text), Ok(expected), "{text}");
    }
    assert_eq!(nicestrtonum("15E"), Ok(15u64 << 60));
}

// Every number error, word for word: first character, suffix, overflow.
#[test]
fn nicestrtonum_errors() {
    assert_eq!(
        nicestrtonum("abc").unwrap_err().to_string(),
        "bad numeric value 'abc'"
    );
    assert_eq!(
        nicestrtonum("-1").unwrap_err().to_string(),
        "bad numeric value '-1'"
    );
    assert_eq!(
        nicestrtonum("").unwrap_err().to_string(),
        "bad numeric value ''"
    );
    assert_eq!(
        nicestrtonum("12X").unwrap_err().to_string(),
        "invalid numeric suffix 'X'"
    );
    assert_eq!(
        nicestrtonum("1BB").unwrap_err().to_string(),
        "invalid numeric suffix 'BB'"
    );
    assert_eq!(
        nicestrtonum("1BiB").unwrap_err().to_string(),
        "invalid numeric suffix 'BiB'"
    );
    assert_eq!(
        nicestrtonum("1KK").unwrap_err().to_string(),
        "invalid numeric suffix 'KK'"
    );
    assert_eq!(
        nicestrtonum(".").unwrap_err().to_string(),
        "invalid numeric suffix '.'"
    );
    assert_eq!(
        nicestrtonum("16E").unwrap_err().to_string(),
        "numeric value is too large"
    );
    assert_eq!(
        nicestrtonum("1Z").unwrap_err().to_string(),
        "numeric value is too large"
    );
    assert_eq!(
        nicestrtonum("99999999999999999999")
            .unwrap_err()
            .to_string(),
        "numeric value is too large"
    );
    assert_eq!(
        nicestrtonum("16.0E").unwrap_err().to_string(),
        "numeric value is too large"
    );
}

// recordsize/volblocksize: power of two in [512, 16M]; the message quotes the typed name.
#[test]
fn block_size_rules() {
    assert_eq!(
        parse_value(ZfsProp::Recordsize, "1M"),
        Ok(PropValue::Number(MIB))
    );
    assert_eq!(
        parse_value(ZfsProp::Recordsize, "16M"),
        Ok(PropValue::Number(16 * MIB))
    );
    assert_eq!(
        parse_value(ZfsProp::Recordsize, "512"),
        Ok(PropValue::Number(512))
    );
    for bad in ["256", "32M", "100K", "none"] {
        assert_eq!(
            error_text(ZfsProp::Recordsize, bad),
            "'recordsize' must be power of 2 from 512B to 16M",
            "{bad}"
        );
    }
    assert_eq!(
        set_error("recsize", "3", fs_set()),
        "'recsize' must be power of 2 from 512B to 16M"
    );
    assert_eq!(
        parse_value_named(ZfsProp::Volblocksize, "volblock", "1000")
            .unwrap_err()
            .to_string(),
        "'volblock' must be power of 2 from 512B to 16M"
    );
}

// Index properties quote the canonical name and the values help text.
#[test]
fn index_errors_and_aliases() {
    assert_eq!(
        error_text(ZfsProp::Copies, "4"),
        "'copies' must be one of '1 | 2 | 3'"
    );
    assert_eq!(
        error_text(ZfsProp::Atime, "yes"),
        "'atime' must be one of 'on | off'"
    );
    assert_eq!(
        error_text(ZfsProp::Atime, "ON"),
        "'atime' must be one of 'on | off'"
    );
    assert_eq!(
        error_text(ZfsProp::Sync, "sometimes"),
        "'sync' must be one of 'standard | always | disabled'"
    );
    assert_eq!(
        parse_value(ZfsProp::Xattr, "on"),
        Ok(PropValue::Index("sa"))
    );
    assert_eq!(
        parse_value(ZfsProp::Acltype, "posixacl"),
        Ok(PropValue::Index("posix"))
    );
    assert_eq!(
        parse_value(ZfsProp::Volmode, "geom"),
        Ok(PropValue::Index("full"))
    );
}

// Compression prints back what was typed (on stays on), except table aliases; unknown words
// get the index sentence with the whole compression word list.
#[test]
fn compression_words() {
    assert_eq!(
        parse_value(ZfsProp::Compression, "on"),
        Ok(PropValue::Index("on"))
    );
    assert_eq!(
        parse_value(ZfsProp::Compression, "lz4"),
        Ok(PropValue::Index("lz4"))
    );
    assert_eq!(
        parse_value(ZfsProp::Compression, "gzip-6"),
        Ok(PropValue::Index("gzip"))
    );
    assert_eq!(
        parse_value(ZfsProp::Compression, "zstd-19"),
        Ok(PropValue::Index("zstd-19"))
    );
    assert_eq!(
        parse_value(ZfsProp::Compression, "zstd-fast-1"),
        Ok(PropValue::Index("zstd-fast"))
    );
    assert_eq!(
        error_text(ZfsProp::Compression, "zstd-20"),
        format!("'compression' must be one of '{COMPRESSION_VALUES}'")
    );
}

// Checksums Zetta does not implement are real OpenZFS words: refused with zcommon's sentence,
// not the "must be one of" one.
#[test]
fn checksum_supported_and_unsupported() {
    assert_eq!(
        parse_value(ZfsProp::Checksum, "sha256"),
        Ok(PropValue::Index("sha256"))
    );
    assert_eq!(
        parse_value(ZfsProp::Checksum, "on"),
        Ok(PropValue::Index("on"))
    );
    let unsupported = parse_value(ZfsProp::Checksum, "skein").unwrap_err();
    assert!(matches!(unsupported, PropError::Unsupported(_)));
    assert!(error_text(ZfsProp::Checksum, "crc32").starts_with("'checksum' must be one of"));
}

// quota/reservation: none = 0, a bare 0 quota is refused, auto only for refreservation.
#[test]
fn quota_none_and_auto() {
    assert_eq!(
        parse_value(ZfsProp::Quota, "none"),
        Ok(PropValue::Number(0))
    );
    assert_eq!(
        parse_value(ZfsProp::Quota, "10G"),
        Ok(PropValue::Number(10 * GIB))
    );
    assert_eq!(
        parse_value(ZfsProp::Reservation, "0"),
        Ok(PropValue::Number(0))
    );
    assert_eq!(
        error_text(ZfsProp::Quota, "0"),
        "use 'none' to disable quota/refquota"
    );
    assert_eq!(
        error_text(ZfsProp::Refquota, "0K"),
        "use 'none' to disable quota/refquota"
    );
    assert_eq!(
        error_text(ZfsProp::Quota, "auto"),
        "use 'none' to disable quota/refquota"
    );
    assert_eq!(
        error_text(ZfsProp::Reservation, "auto"),
        "'auto' is invalid value for 'reservation'"
    );
    assert_eq!(
        set_error("refreservation", "auto", fs_set()),
        "'refreservation=auto' only allowed on volumes"
    );
    let volume = SetTarget {
        object: DatasetType::Volume,
        ..fs_set()
    };
    assert!(validate_set("refreservation", "auto", volume).is_ok());
    assert_eq!(
        parse_value(ZfsProp::FilesystemLimit, "none"),
        Ok(PropValue::Number(u64::MAX))
    );
}

// mountpoint: absolute, none or legacy; component length limit.
#[test]
fn mountpoint_rules() {
    for good in ["/", "/tank", "//odd//but/ok/", "none", "legacy"] {
        assert!(parse_value(ZfsProp::Mountpoint, good).is_ok(), "{good}");
    }
    assert_eq!(
        error_text(ZfsProp::Mountpoint, "tank"),
        "'mountpoint' must be an absolute path, 'none', or 'legacy'"
    );
    assert_eq!(
        error_text(ZfsProp::Mountpoint, &format!("/{}", "a".repeat(256))),
        "component of 'mountpoint' is too long"
    );
    assert_eq!(
        error_text(ZfsProp::Sharenfs, &"o".repeat(8192)),
        "'sharenfs' is too long"
    );
}

// Other per-property range checks.
#[test]
fn special_small_blocks_keys_and_labels() {
    assert_eq!(
        error_text(ZfsProp::SpecialSmallBlocks, "32M"),
        "invalid 'special_small_blocks' property: must be between zero and 16M"
    );
    assert!(parse_value(ZfsProp::SpecialSmallBlocks, "0").is_ok());
    assert_eq!(
        error_text(ZfsProp::Keylocation, "file://x"),
        "invalid keylocation"
    );
    assert!(parse_value(ZfsProp::Keylocation, "file:///k").is_ok());
    assert_eq!(
        error_text(ZfsProp::Pbkdf2iters, "1000"),
        "minimum pbkdf2 iterations is 100000"
    );
    assert_eq!(
        error_text(ZfsProp::Mlslabel, "none"),
        "mlslabels are unsupported"
    );
}

// zfs set front-end checks, in zfs_valid_proplist order.
#[test]
fn validate_set_messages() {
    let snapshot = SetTarget {
        object: DatasetType::Snapshot,
        ..fs_set()
    };
    assert_eq!(
        set_error("bogus", "1", fs_set()),
        "invalid property 'bogus'"
    );
    assert_eq!(set_error("used", "1", fs_set()), "'used' is readonly");
    assert_eq!(
        set_error("written@snap", "1", fs_set()),
        "'written@snap' is readonly"
    );
    assert_eq!(
        set_error("volsize", "1G", fs_set()),
        "'volsize' does not apply to datasets of this type"
    );
    assert_eq!(
        set_error("casesensitivity", "mixed", fs_set()),
        "'casesensitivity' is readonly"
    );
    assert_eq!(
        set_error("atime", "off", snapshot),
        "this property can not be modified for snapshots"
    );
    assert_eq!(
        set_error("bogus", "x", snapshot),
        "this property can not be modified for snapshots"
    );
    let creating = SetTarget {
        creating: true,
        ..fs_set()
    };
    assert_eq!(
        validate_set("casesensitivity", "sensitive", creating),
        Ok(SetValue::Native(
            ZfsProp::Casesensitivity,
            PropValue::Index("sensitive")
        ))
    );
    // Name folding is not built: refused at creation, not stored and ignored (issue 21).
    assert_eq!(
        validate_set("casesensitivity", "mixed", creating),
        Err(PropError::NotHonoured { creating: true })
    );
    assert_eq!(
        validate_set("syncoid:sync", "false", snapshot),
        Ok(SetValue::User {
            name: "syncoid:sync".to_string(),
            value: "false".to_string()
        })
    );
    assert_eq!(
        validate_set("recsize", "1M", fs_set()),
        Ok(SetValue::Native(
            ZfsProp::Recordsize,
            PropValue::Number(MIB)
        ))
    );
}

// Values Zetta would store and not honour are refused with libzfs's words (issue 21):
// encryption parameters as on a pool without the encryption feature, the rest as ENOTSUP.
#[test]
fn unhonoured_values_are_refused() {
    let creating = SetTarget {
        creating: true,
        ..fs_set()
    };
    for (prop, value) in [
        ("encryption", "on"),
        ("keyformat", "raw"),
        ("keylocation", "prompt"),
        ("pbkdf2iters", "200000"),
    ] {
        assert_eq!(
            validate_set(prop, value, creating).unwrap_err().to_string(),
            "Encryption feature not enabled."
        );
    }
    assert_eq!(
        set_error("keylocation", "prompt", fs_set()),
        "keylocation must be 'none' for unencrypted datasets"
    );
    assert_eq!(
        set_error("dedup", "on", fs_set()),
        "pool and or dataset must be upgraded to set this property or value"
    );
    assert_eq!(
        set_error("checksum", "skein", fs_set()),
        "pool and or dataset must be upgraded to set this property or value"
    );
    // Tuning hints Zetta does not act on: accepted, they would be shown but do nothing.
    for (prop, value) in [
        ("logbias", "throughput"),
        ("primarycache", "metadata"),
        ("secondarycache", "none"),
        ("prefetch", "none"),
        ("direct", "always"),
        ("dnodesize", "auto"),
        ("redundant_metadata", "most"),
    ] {
        assert_eq!(
            set_error(prop, value, fs_set()),
            "pool and or dataset must be upgraded to set this property or value",
            "{prop}={value}"
        );
    }
    assert_eq!(
        validate_set("acltype", "posixacl", creating)
            .unwrap_err()
            .to_string(),
        "pool must be upgraded to set this property or value"
    );
    for (prop, value) in [
        ("dedup", "off"),
        ("acltype", "off"),
        ("sharenfs", "off"),
        ("encryption", "off"),
        ("keylocation", "none"),
        ("snapshot_limit", "none"),
        ("logbias", "latency"),
        ("primarycache", "all"),
        ("dnodesize", "legacy"),
    ] {
        assert!(
            validate_set(prop, value, creating).is_ok(),
            "{prop}={value}"
        );
    }
}

// volsize on an existing volume: multiple of volblocksize, not zero.
#[test]
fn volsize_rules() {
    let volume = SetTarget {
        object: DatasetType::Volume,
        creating: false,
        volblocksize_bytes: Some(16 * KIB),
    };
    assert_eq!(
        set_error("volsize", "1000K", volume),
        "'volsize' must be a multiple of volume block size (16K)"
    );
    assert_eq!(
        set_error("volsize", "0", volume),
        "'volsize' cannot be zero"
    );
    assert!(validate_set("volsize", "1G", volume).is_ok());
}

// Display rules of zfs_prop_get, with and without -p.
#[test]
fn format_rules() {
    let number = |prop, value, parsable| format_value(prop, &PropValue::Number(value), parsable);
    assert_eq!(number(ZfsProp::Used, 0, false), "0B");
    assert_eq!(number(ZfsProp::Used, 1536, false), "1.50K");
    assert_eq!(number(ZfsProp::Used, 1536, true), "1536");
    assert_eq!(number(ZfsProp::Written, 0, false), "0");
    assert_eq!(number(ZfsProp::Recordsize, 128 * KIB, false), "128K");
    assert_eq!(number(ZfsProp::Recordsize, 128 * KIB, true), "131072");
    assert_eq!(number(ZfsProp::Quota, 0, false), "none");
    assert_eq!(number(ZfsProp::Quota, 0, true), "0");
    assert_eq!(number(ZfsProp::Quota, 10 * GIB, false), "10G");
    assert_eq!(number(ZfsProp::FilesystemLimit, u64::MAX, true), "none");
    assert_eq!(number(ZfsProp::SnapshotLimit, 2048, false), "2K");
    assert_eq!(number(ZfsProp::CompressRatio, 100, false), "1.00x");
    assert_eq!(number(ZfsProp::CompressRatio, 100, true), "1.00");
    assert_eq!(
        number(ZfsProp::Guid, 12_345_678_901_234_567_890, false),
        "12345678901234567890"
    );
    assert_eq!(number(ZfsProp::Creation, 1_795_316_094, true), "1795316094");
    let utc = TimeZone::FixedOffsetSecs(0);
    let creation = PropValue::Number(1_795_316_094);
    assert_eq!(
        format_value_in(ZfsProp::Creation, &creation, false, utc),
        "Sun Nov 22  2:54 2026"
    );
    assert_eq!(
        format_value_in(ZfsProp::SnapshotsChanged, &creation, false, utc),
        "Sun Nov 22  2:54:54 2026"
    );
    assert_eq!(
        format_value(ZfsProp::Mounted, &PropValue::Index("yes"), false),
        "yes"
    );
}

// parse(format(v, -p)) == v for settable properties, and to_stored/from_stored round-trips,
// so values survive the CLI and the store.
#[test]
fn round_trips() {
    let samples = [
        (ZfsProp::Recordsize, "1M"),
        (ZfsProp::Quota, "1.5G"),
        (ZfsProp::Reservation, "none"),
        (ZfsProp::Compression, "zstd-3"),
        (ZfsProp::Xattr, "on"),
        (ZfsProp::Copies, "2"),
        (ZfsProp::Mountpoint, "/srv/data"),
        (ZfsProp::SnapshotLimit, "none"),
        (ZfsProp::SnapshotLimit, "10"),
    ];
    for (prop, input) in samples {
        let value = parse_value(prop, input).unwrap();
        let parsable = format_value(prop, &value, true);
        assert_eq!(parse_value(prop, &parsable), Ok(value.clone()), "{input}");
        assert_eq!(
            PropValue::from_stored(prop, &value.to_stored()),
            Some(value.clone())
        );
        let human = format_value(prop, &value, false);
        assert_eq!(parse_value(prop, &human), Ok(value), "{human}");
    }
}
