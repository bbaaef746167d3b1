//! `zpool reguid [-g guid] pool` (OpenZFS `zpool_do_reguid`, `spa_change_guid`): gives a
//! pool a new guid, random or the one `-g` names, so that a copy of its devices (a cloned
//! disk image) can be imported beside the original.
//!
//! The guid is parsed as `strtoull(…, 10)` parses it: decimal only, leading zeros allowed
//! (`0123` is 123), a leading `-` wraps (`-1` is 2^64-1); hexadecimal, out-of-range values
//! and trailing characters are usage errors ("invalid GUID: …", exit 2). The kernel's
//! refusals, worded as libzfs words them: 0 is an invalid argument (EINVAL), a guid some
//! imported pool already has (this one included) "pool already exists" (EEXIST).
//!
//! The daemon keys pools and cache entries by guid: once the engine has committed the new
//! guid (`Spa::reguid`), the registry and the cache file move the pool to its new key.

use super::pool::{self, spa_error_text};
use super::{fail, getopt, usage, CmdError, CmdResult, Ctx};
use zetta::spa::SpaError;
use zetta::types::Guid;

pub const SYNOPSIS: &str = "\treguid [-g guid] <pool>\n";

/// `strtoull(text, &end, 10)` with `*end == '\0'` and no ERANGE.
pub fn parse_guid(text: &str) -> Option<u64> {
    let trimmed = text.trim_start();
    let (negative, digits) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: u64 = digits.parse().ok()?;
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

pub fn cmd_reguid(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "g:")?;
    let guid = match parsed.last('g') {
        Some(text) => match parse_guid(&text) {
            Some(guid) => Some(guid),
            None => return usage(format!("invalid GUID: {text}")),
        },
        None => None,
    };
    let name = match parsed.operands.as_slice() {
        [] => return usage("missing pool name"),
        [name] => name.clone(),
        _ => return usage("too many arguments"),
    };
    let action = format!("cannot reguid '{name}'");
    let mut imported = pool::open_pool(&name)?;
    pool::writable(&imported, &action)?;
    if guid == Some(0) {
        return fail(format!("{action}: invalid argument"));
    }
    if let Some(guid) = guid {
        // spa_guid_exists: no two imported pools share a guid.
        let taken = guid == imported.guid
            || crate::daemon::registry::get().is_some_and(|r| r.pool(guid).is_some());
        if taken {
            return fail(format!("{action}: pool already exists"));
        }
    }
    let old = imported.guid;
    let new = imported.spa.reguid(guid.map(Guid)).map_err(|e| match e {
        SpaError::Busy(_) => CmdError::Fail(format!("{action}: pool already exists")),
        e => CmdError::Fail(format!("{action}: {}", spa_error_text(&e))),
    })?;
    imported
        .spa
        .log_history(&super::create::history_line("reguid", args));
    imported.guid = new.0;
    if let Some(registry) = crate::daemon::registry::get() {
        if let Some(held) = registry.remove(old) {
            registry.put_back(new.0, held);
        }
    }
    // The cache file lists the pool under its new guid (commit records it) and no
    // longer under the old one.
    super::cache::remove(old).map_err(CmdError::Fail)?;
    pool::commit(&mut imported)
}

#[cfg(test)]
mod tests {
    use super::parse_guid;

    /// The guids zpool_reguid_001_pos and _002_neg give `-g`, read as strtoull reads them.
    #[test]
    fn guids_parse_as_strtoull() {
        assert_eq!(parse_guid("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_guid("314"), Some(314));
        assert_eq!(parse_guid("0123"), Some(123));
        assert_eq!(parse_guid("-1"), Some(u64::MAX));
        assert_eq!(parse_guid("0"), Some(0));
        assert_eq!(parse_guid("18446744073709551616"), None);
        assert_eq!(parse_guid("0xA"), None);
        assert_eq!(parse_guid("0xa"), None);
        assert_eq!(parse_guid("12abc"), None);
        assert_eq!(parse_guid(""), None);
    }
}
