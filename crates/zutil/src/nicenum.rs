//! Human-readable numbers and times, as OpenZFS prints them.
//!
//! Counterpart: `lib/libzutil/zutil_nicenum.c` (`zfs_nicenum_format`, `zfs_nicenum`,
//! `zfs_nicebytes`), `secs_to_dhms` in `cmd/zpool/zpool_main.c`, libc `ctime(3)` and the
//! `%a %b %e %k:%M %Y` strftime used for the `creation` property.
//!
//! Invariants of the size format (scripts parse it, so they are exact):
//! - base 1024, suffixes `K M G T P E`, never "iB"; the largest suffix is `E`.
//! - an exact multiple of its unit prints without decimals (`128K`, `1G`).
//! - otherwise the first of 2, 1, 0 decimals whose text fits in 5 characters
//!   (`1.50G`, `19.5K`, `262M`); if none fits the 0-decimal text is kept (`16.0E`
//!   is what u64::MAX prints, because 2 decimals would be 6 characters).
//! - below 1024: bare digits for [`nicenum`], digits plus `B` for [`nicenum_space`].
//!
//! Decimals are rounded from the binary double exactly as C `printf("%.*f")` does
//! (round half to even on the exact binary value); Rust's float formatting does the same.
//!
//! Times: [`ctime`] is `ctime(3)` without its trailing newline, in local time (the `TZ`
//! environment variable, UTC when unset), with the day of month space-padded to 2.

use std::fmt::Write as _;

/// Suffixes for powers of 1024, index 0 being "no suffix".
const UNIT_SUFFIXES: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
/// Largest index into [`UNIT_SUFFIXES`] (`E`, 2^60).
const UNIT_INDEX_MAX: usize = 6;
/// The widest a formatted number may be before fewer decimals are tried.
const NICENUM_WIDTH_MAX: usize = 5;

/// Formats `value` with base-1024 suffixes; `below_unit_suffix` is appended to values
/// below 1024 ("" for `zfs_nicenum`, "B" for `zfs_nicebytes`).
fn nicenum_with(value: u64, below_unit_suffix: &str) -> String {
    let mut scaled = value;
    let mut index = 0usize;
    while scaled >= 1024 && index < UNIT_INDEX_MAX {
        scaled /= 1024;
        index += 1;
    }
    if index == 0 {
        return format!("{value}{below_unit_suffix}");
    }
    let suffix = UNIT_SUFFIXES[index];
    let unit_bytes: u64 = 1u64 << (10 * index);
    if value.is_multiple_of(unit_bytes) {
        return format!("{scaled}{suffix}");
    }
    let value_in_units = value as f64 / unit_bytes as f64;
    let mut text = String::new();
    for decimals in [2usize, 1, 0] {
        text = format!("{value_in_units:.decimals$}{suffix}");
        if text.len() <= NICENUM_WIDTH_MAX {
            break;
        }
    }
    text
}

/// `zfs_nicenum`: "512", "1023", "1K", "1.50K", "19.5K", "262M", "16.0E".
/// Used for error counters, iostat columns and pool SIZE/ALLOC/FREE.
pub fn nicenum(value: u64) -> String {
    nicenum_with(value, "")
}

/// `zfs_nicebytes`: like [`nicenum`] but values below 1024 end in `B` ("0B", "512B").
/// Used for dataset space columns and the scan lines of `zpool status`.
pub fn nicenum_space(bytes: u64) -> String {
    nicenum_with(bytes, "B")
}

/// A ratio stored as hundredths, as the `compressratio`/`dedupratio` properties
/// print it: 100 -> "1.00x".
pub fn nice_ratio(ratio_x100: u64) -> String {
    format!("{}.{:02}x", ratio_x100 / 100, ratio_x100 % 100)
}

/// The same ratio in parsable (`-p`) form: 100 -> "1.00".
pub fn nice_ratio_parsable(ratio_x100: u64) -> String {
    format!("{}.{:02}", ratio_x100 / 100, ratio_x100 % 100)
}

/// `secs_to_dhms`: "00:00:05", and "2 days 03:04:05" once a day has passed.
pub fn nice_time_hms(total_secs: u64) -> String {
    let days = total_secs / 86_400;
    let hours = (total_secs / 3_600) % 24;
    let minutes = (total_secs / 60) % 60;
    let secs = total_secs % 60;
    if days > 0 {
        format!("{days} days {hours:02}:{minutes:02}:{secs:02}")
    } else {
        format!("{hours:02}:{minutes:02}:{secs:02}")
    }
}

/// Which clock converts epoch seconds to calendar time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeZone {
    /// The process's local time (`TZ`), as libc `localtime_r` sees it.
    Local,
    /// A fixed offset east of UTC in seconds (0 = UTC); used by golden tests.
    FixedOffsetSecs(i64),
}

extern "C" {
    /// POSIX `tzset(3)`; the libc crate does not declare it for every unix target.
    fn tzset();
}

/// The local UTC offset at `epoch_secs`, from libc; 0 if libc cannot tell.
fn local_offset_secs(epoch_secs: i64) -> i64 {
    let time: libc::time_t = match libc::time_t::try_from(epoch_secs) {
        Ok(time) => time,
        Err(_) => return 0,
    };
    // SAFETY: `tm` is plain old data that localtime_r fully overwrites on success; both
    // pointers are valid for the duration of the call; tzset only reads `TZ`.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        tzset();
        if libc::localtime_r(&time, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff
    }
}

/// Broken-down civil time (proleptic Gregorian), enough for ctime and strftime.
struct CivilTime {
    year: i64,
    month_index: usize,   // 0 = January
    day_of_month: i64,    // 1..=31
    weekday_index: usize, // 0 = Sunday
    hour: i64,
    minute: i64,
    second: i64,
}

const WEEKDAY_NAMES: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTH_NAMES: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

impl CivilTime {
    /// Converts seconds since the epoch, already shifted into the wanted zone.
    fn from_local_secs(local_secs: i64) -> CivilTime {
        let days = local_secs.div_euclid(86_400);
        let secs_of_day = local_secs.rem_euclid(86_400);
        // Days since 1970-01-01 to a civil date (era-based algorithm, March-based years).
        let shifted = days + 719_468;
        let era = shifted.div_euclid(146_097);
        let day_of_era = shifted.rem_euclid(146_097);
        let year_of_era =
            (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let month_from_march = (5 * day_of_year + 2) / 153;
        let day_of_month = day_of_year - (153 * month_from_march + 2) / 5 + 1;
        let month_number = if month_from_march < 10 {
            month_from_march + 3
        } else {
            month_from_march - 9
        };
        let year = year_of_era + era * 400 + i64::from(month_number <= 2);
        // 1970-01-01 was a Thursday (index 4).
        let weekday_index = (days + 4).rem_euclid(7) as usize;
        CivilTime {
            year,
            month_index: (month_number - 1) as usize,
            day_of_month,
            weekday_index,
            hour: secs_of_day / 3_600,
            minute: (secs_of_day / 60) % 60,
            second: secs_of_day % 60,
        }
    }

    fn at(epoch_secs: i64, zone: TimeZone) -> CivilTime {
        let offset_secs = match zone {
            TimeZone::Local => local_offset_secs(epoch_secs),
            TimeZone::FixedOffsetSecs(offset_secs) => offset_secs,
        };
        CivilTime::from_local_secs(epoch_secs.saturating_add(offset_secs))
    }
}

/// `ctime(3)` without the trailing newline, in local time: "Sun Nov 22 02:54:54 2026".
pub fn ctime(epoch_secs: i64) -> String {
    ctime_in(epoch_secs, TimeZone::Local)
}

/// [`ctime`] in an explicit zone.
pub fn ctime_in(epoch_secs: i64, zone: TimeZone) -> String {
    let civil = CivilTime::at(epoch_secs, zone);
    let mut text = String::new();
    // Format is "%.3s %.3s%3d %.2d:%.2d:%.2d %d".
    let _ = write!(
        text,
        "{} {}{:3} {:02}:{:02}:{:02} {}",
        WEEKDAY_NAMES[civil.weekday_index],
        MONTH_NAMES[civil.month_index],
        civil.day_of_month,
        civil.hour,
        civil.minute,
        civil.second,
        civil.year
    );
    text
}

/// `date(1)`'s format in the C locale (`nl_langinfo(_DATE_FMT)`, "%a %b %e %H:%M:%S %Z
/// %Y"), in local time, as `-T d` and JSON timestamps print it: "Sat Nov 28 06:30:00 UTC
/// 2026". Empty if libc cannot convert the time.
pub fn date_text(epoch_secs: i64) -> String {
    let time: libc::time_t = match libc::time_t::try_from(epoch_secs) {
        Ok(time) => time,
        Err(_) => return String::new(),
    };
    let pattern = c"%a %b %e %H:%M:%S %Z %Y";
    let mut buffer = [0u8; 64];
    // SAFETY: `tm` is filled by localtime_r before use; strftime writes at most
    // buffer.len() bytes and returns how many it wrote.
    let written = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        tzset();
        if libc::localtime_r(&time, &mut tm).is_null() {
            return String::new();
        }
        libc::strftime(
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            pattern.as_ptr(),
            &tm,
        )
    };
    String::from_utf8_lossy(&buffer[..written.min(buffer.len())]).into_owned()
}

/// The `creation` property as `zfs get`/`zfs list` print it: strftime
/// `%a %b %e %k:%M %Y`, e.g. "Sun Nov 22  2:54 2026".
pub fn zfs_creation_time(epoch_secs: i64) -> String {
    zfs_creation_time_in(epoch_secs, TimeZone::Local)
}

/// [`zfs_creation_time`] in an explicit zone.
pub fn zfs_creation_time_in(epoch_secs: i64, zone: TimeZone) -> String {
    let civil = CivilTime::at(epoch_secs, zone);
    format!(
        "{} {} {:2} {:2}:{:02} {}",
        WEEKDAY_NAMES[civil.weekday_index],
        MONTH_NAMES[civil.month_index],
        civil.day_of_month,
        civil.hour,
        civil.minute,
        civil.year
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    const GIB: u64 = 1024 * MIB;

    // Values below one unit print bare, with no suffix and no decimals.
    #[test]
    fn nicenum_below_1024_is_bare_digits() {
        assert_eq!(nicenum(0), "0");
        assert_eq!(nicenum(512), "512");
        assert_eq!(nicenum(1023), "1023");
    }

    // Exact multiples drop decimals; this is what makes "128K" and "1G".
    #[test]
    fn nicenum_exact_multiples_have_no_decimals() {
        assert_eq!(nicenum(1024), "1K");
        assert_eq!(nicenum(128 * KIB), "128K");
        assert_eq!(nicenum(GIB), "1G");
        assert_eq!(nicenum(1u64 << 60), "1E");
    }

    // The 2/1/0 decimals search: each case picks a different precision.
    #[test]
    fn nicenum_picks_the_first_precision_that_fits_five_chars() {
        assert_eq!(nicenum(1536), "1.50K");
        assert_eq!(nicenum(19_968), "19.5K");
        assert_eq!(nicenum(262 * MIB + 5 * KIB), "262M");
        assert_eq!(nicenum(GIB + GIB / 2), "1.50G");
        // 10239 is 9.999K: two decimals round to "10.00K" (6 chars), so one decimal.
        assert_eq!(nicenum(10_239), "10.0K");
    }

    // u64::MAX is 16E - 1: "16.00E" is too wide, so it prints "16.0E".
    #[test]
    fn nicenum_u64_max_is_16_0e() {
        assert_eq!(nicenum(u64::MAX), "16.0E");
    }

    // C printf rounds ties to even on the binary value; 1.125K must print "1.12K".
    #[test]
    fn nicenum_rounds_ties_like_printf() {
        assert_eq!(nicenum(1152), "1.12K");
        assert_eq!(nicenum(1_408), "1.38K"); // 1.375 -> 1.38 (tie to even)
    }

    // Space columns say "0B"/"512B" below one unit and agree with nicenum above it.
    #[test]
    fn nicenum_space_has_b_below_1024() {
        assert_eq!(nicenum_space(0), "0B");
        assert_eq!(nicenum_space(512), "512B");
        assert_eq!(nicenum_space(1023), "1023B");
        assert_eq!(nicenum_space(1024), "1K");
        assert_eq!(nicenum_space(1536), "1.50K");
    }

    // Ratios print with two decimals and an x; -p drops the x.
    #[test]
    fn ratio_formats() {
        assert_eq!(nice_ratio(100), "1.00x");
        assert_eq!(nice_ratio(1_234), "12.34x");
        assert_eq!(nice_ratio_parsable(105), "1.05");
    }

    // secs_to_dhms switches to "N days" only past 24 hours.
    #[test]
    fn hms_formats() {
        assert_eq!(nice_time_hms(5), "00:00:05");
        assert_eq!(nice_time_hms(3_661), "01:01:01");
        assert_eq!(
            nice_time_hms(2 * 86_400 + 3 * 3_600 + 4 * 60 + 5),
            "2 days 03:04:05"
        );
    }

    // ctime pads the day with a space, not a zero; checked against known dates.
    #[test]
    fn ctime_in_utc() {
        assert_eq!(
            ctime_in(0, TimeZone::FixedOffsetSecs(0)),
            "Thu Jan  1 00:00:00 1970"
        );
        assert_eq!(
            ctime_in(1_795_316_094, TimeZone::FixedOffsetSecs(0)),
            "Sun Nov 22 02:54:54 2026"
        );
        assert_eq!(
            ctime_in(951_782_400, TimeZone::FixedOffsetSecs(0)),
            "Tue Feb 29 00:00:00 2000"
        );
        // An offset shifts the wall clock (UTC+1 one second before midnight).
        assert_eq!(
            ctime_in(-3_601, TimeZone::FixedOffsetSecs(3_600)),
            "Wed Dec 31 23:59:59 1969"
        );
    }

    // %e and %k are space-padded, %M zero-padded.
    #[test]
    fn creation_time_format() {
        assert_eq!(
            zfs_creation_time_in(1_795_316_094, TimeZone::FixedOffsetSecs(0)),
            "Sun Nov 22  2:54 2026"
        );
        assert_eq!(
            zfs_creation_time_in(1_794_229_200, TimeZone::FixedOffsetSecs(0)),
            "Mon Nov  9 13:00 2026"
        );
    }

    // Local time must not panic and must have the ctime shape.
    #[test]
    fn ctime_local_has_ctime_shape() {
        assert_eq!(ctime(1_795_316_094).len(), 24);
    }
}
