//! The daemon's log: one line per message, `2026-11-28T00:10:00.123Z LEVEL message`,
//! on the daemon's standard error (`<run dir>/zetta.log` for a daemon a command started,
//! the terminal or journald for one run in the foreground or by a service manager).
//!
//! Dependency-free on purpose: a line is formatted whole and written with one `write_all`
//! on the unlocked stderr handle, so lines of concurrent threads never interleave within
//! a line and no thread holds a lock across a write (see `main.rs`).

use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warn,
    Info,
}

impl Level {
    pub fn word(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
        }
    }
}

/// The current time in UTC as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: `tm` is plain data that gmtime_r fills before it is read.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::gmtime_r(&secs, &mut tm).is_null() {
            return format!("{}.{:03}", now.as_secs(), now.subsec_millis());
        }
        tm
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        now.subsec_millis()
    )
}

/// One log line for `message` (each of its lines gets the prefix).
pub fn line(level: Level, message: &str) -> String {
    let stamp = timestamp();
    let mut text = String::new();
    for part in message.trim_end_matches('\n').split('\n') {
        text.push_str(&format!("{stamp} {} {part}\n", level.word()));
    }
    text
}

/// Writes `message` to `err` as log lines.
pub fn write(err: &mut dyn Write, level: Level, message: &str) {
    let _ = err.write_all(line(level, message).as_bytes());
}

/// Writes `message` to the process's standard error as log lines.
pub fn log(level: Level, message: &str) {
    write(&mut std::io::stderr(), level, message);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line carries the time and the level.
    #[test]
    fn lines_carry_time_and_level() {
        let text = line(Level::Warn, "one\ntwo\n");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        for (l, word) in lines.iter().zip(["one", "two"]) {
            let (stamp, rest) = l.split_once(' ').unwrap();
            assert_eq!(stamp.len(), "2026-11-28T00:10:00.123Z".len(), "{l}");
            assert!(stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T', "{l}");
            assert_eq!(rest, format!("WARN {word}"));
        }
    }
}
