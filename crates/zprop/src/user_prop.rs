//! User properties (`module:name=value`): the names admins and tools such as syncoid
//! (`syncoid:sync`) hang their own settings on.
//!
//! Counterpart: `zfs_prop_user` and `zprop_valid_char` (module/zcommon/zfs_prop.c,
//! zprop_common.c), the user-property branch of `zfs_valid_proplist` (libzfs_dataset.c) and
//! `zfs_check_userprops` (module/zfs/zfs_ioctl.c).
//!
//! Theory. A name is a user property when every byte is a lower-case letter, digit, `-`, `_`,
//! `.` or `:` and at least one is `:`; anything else that is not a native property is "invalid
//! property". The limits are ZAP limits that count a terminating NUL: the name must be shorter
//! than 256 bytes (so at most 255) and the value shorter than 8192 bytes (at most 8191), which
//! is one less than zfsprops(7) suggests. User properties are always inherited, may be set on
//! snapshots, and print `-` (value and source) where unset.

use crate::zfs_prop::PropError;

/// Longest user property name in bytes (ZAP_MAXNAMELEN - 1).
pub const USER_PROP_NAME_LEN_MAX: usize = 255;
/// Longest user property value in bytes (ZAP_MAXVALUELEN - 1).
pub const USER_PROP_VALUE_LEN_MAX: usize = 8191;

/// `zprop_valid_char`.
fn valid_char(byte: u8) -> bool {
    byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'-' | b'_' | b'.' | b':')
}

/// `zfs_prop_user`: whether `name` is spelled like a user property.
pub fn is_user_prop_name(name: &str) -> bool {
    name.bytes().all(valid_char) && name.contains(':')
}

/// Checks a user property name for `zfs get/inherit/list -o`: `invalid property 'X'`.
pub fn check_user_prop_name(name: &str) -> Result<(), PropError> {
    if is_user_prop_name(name) {
        Ok(())
    } else {
        Err(PropError::InvalidProperty(name.to_string()))
    }
}

/// The user property that exports a volume over NBD on TCP (`on`, `off` or
/// `ADDRESS:PORT`; the daemon's `nbd` module acts on it). Zetta's own user property, so its
/// value is checked when set: a value the daemon could not act on is refused, not stored.
pub const SHARENBD: &str = "org.zetta:sharenbd";
/// `org.zetta:sharenbd=on`: loopback only, on the port IANA gives NBD.
pub const SHARENBD_DEFAULT: &str = "127.0.0.1:10809";

/// The TCP address a `org.zetta:sharenbd` value asks for: `Ok(None)` for `off`, `Err` for
/// a value that is neither `on`, `off` nor `ADDRESS:PORT`.
pub fn sharenbd_address(value: &str) -> Result<Option<std::net::SocketAddr>, PropError> {
    let value = match value {
        "off" => return Ok(None),
        "on" => SHARENBD_DEFAULT,
        other => other,
    };
    value.parse().map(Some).map_err(|_| PropError::MustBeOneOf {
        name: SHARENBD,
        values: "on | off | ADDRESS:PORT",
    })
}

/// Checks a `zfs set name=value` of a user property (name already spelled as one): the name
/// and value length limits, with libzfs's and the kernel's messages, and the value of
/// Zetta's own `org.zetta:sharenbd`.
pub fn check_user_prop(name: &str, value: &str) -> Result<(), PropError> {
    check_user_prop_name(name)?;
    if name.len() > USER_PROP_NAME_LEN_MAX {
        return Err(PropError::UserNameTooLong(name.to_string()));
    }
    if value.len() > USER_PROP_VALUE_LEN_MAX {
        return Err(PropError::UserValueTooLong);
    }
    if name == SHARENBD {
        sharenbd_address(value)?;
    }
    Ok(())
}

/// The `zfs list -o` header of a user property: the name upper-cased (`SYNCOID:SYNC`).
pub fn user_prop_column(name: &str) -> String {
    name.to_ascii_uppercase()
}

#[cfg(test)]
mod tests {
    // Why: the daemon acts on org.zetta:sharenbd; a value it cannot act on must be refused
    // at `zfs set`, not stored and then only logged by the daemon.
    #[test]
    fn sharenbd_values_are_checked_when_set() {
        assert!(check_user_prop(SHARENBD, "on").is_ok());
        assert!(check_user_prop(SHARENBD, "off").is_ok());
        assert!(check_user_prop(SHARENBD, "0.0.0.0:10900").is_ok());
        assert!(check_user_prop(SHARENBD, "[::1]:10809").is_ok());
        assert_eq!(
            check_user_prop(SHARENBD, "yes").unwrap_err().to_string(),
            "'org.zetta:sharenbd' must be one of 'on | off | ADDRESS:PORT'"
        );
        assert!(check_user_prop(SHARENBD, "localhost").is_err());
        assert!(check_user_prop("com.example:share", "yes").is_ok());
    }

    use super::*;

    // syncoid reads `syncoid:sync`; sanoid-style names with dots and dashes must pass.
    #[test]
    fn tool_property_names_are_user_properties() {
        assert!(is_user_prop_name("syncoid:sync"));
        assert!(is_user_prop_name("com.sun:auto-snapshot"));
        assert!(is_user_prop_name("a_b.c-d:e:f"));
        assert!(is_user_prop_name(":"));
    }

    // Without ':' a name is native or invalid; upper case and spaces are never allowed.
    #[test]
    fn names_without_colon_or_with_bad_chars_are_invalid() {
        for name in ["syncoid", "Syncoid:sync", "my prop:x", "a:b/c", "a:é", ""] {
            assert!(!is_user_prop_name(name), "{name}");
            assert_eq!(
                check_user_prop_name(name).unwrap_err().to_string(),
                format!("invalid property '{name}'")
            );
        }
    }

    // The limits count a NUL: 255 name bytes and 8191 value bytes pass, one more fails with
    // libzfs's and the kernel's exact sentences.
    #[test]
    fn length_limits_and_messages() {
        let name_max = format!("a:{}", "b".repeat(USER_PROP_NAME_LEN_MAX - 2));
        assert!(check_user_prop(&name_max, "v").is_ok());
        let name_long = format!("{name_max}c");
        assert_eq!(
            check_user_prop(&name_long, "v").unwrap_err().to_string(),
            format!("property name '{name_long}' is too long")
        );
        let value_max = "x".repeat(USER_PROP_VALUE_LEN_MAX);
        assert!(check_user_prop("a:b", &value_max).is_ok());
        assert_eq!(
            check_user_prop("a:b", &format!("{value_max}x"))
                .unwrap_err()
                .to_string(),
            "property value too long"
        );
    }

    // zfs list -o prints user property headers upper-cased.
    #[test]
    fn column_header_is_upper_case() {
        assert_eq!(user_prop_column("syncoid:sync"), "SYNCOID:SYNC");
    }
}
