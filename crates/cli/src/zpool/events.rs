//! `zpool events [-vHf [pool] | -c]` (OpenZFS `zpool_do_events`, `zfs_fm.c`, `fm.c`):
//! the pool's fault-management events — ereports (`ereport.fs.zfs.checksum`, `io`,
//! `data`) and sysevents (`sysevent.fs.zfs.scrub_start`, `scrub_finish`, `scrub_abort`,
//! `resilver_start`, `resilver_finish`, `pool_create`, `pool_import`, `pool_export`,
//! `pool_destroy`) — with OpenZFS's class and payload names and its `-v` layout.
//!
//! Theory: the engine queues raw moments (`zetta::spa::events`); `pump` turns them into
//! full events (pool name and guid, the vdev's path, type, parent and error counters,
//! as `zfs_ereport_start` and `zfs_event_create` fill them) and `post` gives each its
//! time and eid and appends it to the event log, a file beside the cache file
//! (`<cache file>.events`), so events outlive the daemon as OpenZFS's outlive `zed`
//! restarts. The log keeps the newest `ZEVENT_LEN_MAX` events (`zfs_zevent_len_max`)
//! and, in its first line, the next eid, so eids keep growing across `-c` and restarts.
//! Every change of the file happens under an exclusive flock on it (the daemon's
//! threads and `ZETTA_DIRECT` processes alike); readers take it shared. `PUMP` orders
//! the pumps of one process, so eids follow the order in which the engine saw things.
//! Lock order: a pool's lock (when the caller holds one) → `PUMP` → the file's flock.
//! The pump never waits for a pool lock: it tries for a moment and retries later.

use super::{getopt, usage, CmdError, CmdResult, Ctx};
use std::io::{Read, Seek, Write};
use zetta::spa::events::EngineEvent;
use zetta::spa::Spa;
use zetta::vdev::{Vdev, VdevState};

/// Events the log keeps (OpenZFS's `zfs_zevent_len_max` default).
pub const ZEVENT_LEN_MAX: usize = 512;
/// What the first line of the log starts with.
const LOG_MAGIC: &str = "zetta-zevents 1";
/// ECKSUM (EBADE on Linux) and EIO, as `zio_err` carries them.
const ECKSUM: i32 = 52;
const EIO: i32 = 5;

/// An nvpair value, in the types the events use.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U8(u8),
    I32(i32),
    U32(u32),
    U64(u64),
    I64(i64),
    Str(String),
    I64Array(Vec<i64>),
    U64Array(Vec<u64>),
    StrArray(Vec<String>),
    List(Vec<(String, Value)>),
}

/// An event: its nvpairs in order (class first, time and eid last once posted).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Event {
    pub fields: Vec<(String, Value)>,
}

impl Event {
    fn push(&mut self, name: &str, value: Value) -> &mut Event {
        self.fields.push((name.to_string(), value));
        self
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn string(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }

    pub fn u64(&self, name: &str) -> Option<u64> {
        match self.get(name) {
            Some(Value::U64(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn class(&self) -> &str {
        self.string("class").unwrap_or("")
    }

    /// (seconds, nanoseconds) of `time`.
    pub fn time(&self) -> (i64, i64) {
        match self.get("time") {
            Some(Value::I64Array(t)) if t.len() == 2 => (t[0], t[1]),
            _ => (0, 0),
        }
    }
}

// ---- the log file ----

/// `<cache file>.events`.
pub fn log_path() -> std::path::PathBuf {
    let mut path = super::cache::cache_path().into_os_string();
    path.push(".events");
    std::path::PathBuf::from(path)
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' | '\t' | '\n' | '\r' | ' ' | ',' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn encode_fields(fields: &[(String, Value)]) -> String {
    let mut parts = Vec::with_capacity(fields.len());
    for (name, value) in fields {
        let (tag, text) = match value {
            Value::U8(v) => ('b', v.to_string()),
            Value::I32(v) => ('i', v.to_string()),
            Value::U32(v) => ('w', v.to_string()),
            Value::U64(v) => ('u', v.to_string()),
            Value::I64(v) => ('l', v.to_string()),
            Value::Str(s) => ('s', escape(s)),
            Value::I64Array(a) => (
                'L',
                a.iter().map(i64::to_string).collect::<Vec<_>>().join(","),
            ),
            Value::U64Array(a) => (
                'U',
                a.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
            ),
            Value::StrArray(a) => (
                'S',
                a.iter().map(|s| escape(s)).collect::<Vec<_>>().join(","),
            ),
            Value::List(list) => ('n', escape(&encode_fields(list))),
        };
        parts.push(format!("{}={tag}:{text}", escape(name)));
    }
    parts.join("\t")
}

fn decode_fields(line: &str) -> Option<Vec<(String, Value)>> {
    let mut fields = Vec::new();
    if line.is_empty() {
        return Some(fields);
    }
    for part in line.split('\t') {
        let (name, rest) = part.split_once('=')?;
        let (tag, text) = rest.split_once(':')?;
        let list = |text: &str| -> Vec<String> {
            if text.is_empty() {
                Vec::new()
            } else {
                text.split(',').map(str::to_string).collect()
            }
        };
        let value = match tag {
            "b" => Value::U8(text.parse().ok()?),
            "i" => Value::I32(text.parse().ok()?),
            "w" => Value::U32(text.parse().ok()?),
            "u" => Value::U64(text.parse().ok()?),
            "l" => Value::I64(text.parse().ok()?),
            "s" => Value::Str(unescape(text)?),
            "L" => Value::I64Array(
                list(text)
                    .iter()
                    .map(|v| v.parse().ok())
                    .collect::<Option<_>>()?,
            ),
            "U" => Value::U64Array(
                list(text)
                    .iter()
                    .map(|v| v.parse().ok())
                    .collect::<Option<_>>()?,
            ),
            "S" => Value::StrArray(
                list(text)
                    .iter()
                    .map(|v| unescape(v))
                    .collect::<Option<_>>()?,
            ),
            "n" => Value::List(decode_fields(&unescape(text)?)?),
            _ => return None,
        };
        fields.push((unescape(name)?, value));
    }
    Some(fields)
}

/// The log's contents: the next eid and the events kept. A line that does not parse
/// (a torn append after a power cut) is skipped.
fn parse_log(text: &str) -> (u64, Vec<Event>) {
    let mut lines = text.lines();
    let next_eid = lines
        .next()
        .and_then(|first| first.strip_prefix(LOG_MAGIC))
        .and_then(|rest| rest.trim().strip_prefix("next_eid="))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let events: Vec<Event> = lines
        .filter_map(decode_fields)
        .map(|fields| Event { fields })
        .collect();
    let after_last = events
        .iter()
        .filter_map(|e| e.u64("eid"))
        .max()
        .map_or(1, |e| e + 1);
    (next_eid.max(after_last), events)
}

fn render_log(next_eid: u64, events: &[Event]) -> String {
    let mut text = format!("{LOG_MAGIC} next_eid={next_eid}\n");
    for event in events {
        text.push_str(&encode_fields(&event.fields));
        text.push('\n');
    }
    text
}

fn open_log() -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = log_path();
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Rewrites the log under its exclusive lock: `change` gets the next eid and the events
/// and returns the new ones.
fn update_log(change: impl FnOnce(&mut u64, &mut Vec<Event>)) -> std::io::Result<()> {
    let mut file = open_log()?;
    file.lock()?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let (mut next_eid, mut events) = parse_log(&text);
    change(&mut next_eid, &mut events);
    if events.len() > ZEVENT_LEN_MAX {
        let extra = events.len() - ZEVENT_LEN_MAX;
        events.drain(..extra);
    }
    let rendered = render_log(next_eid, &events);
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(rendered.as_bytes())?;
    file.unlock()
}

/// Every event kept, oldest first.
pub fn read_log() -> Vec<Event> {
    let Ok(mut file) = std::fs::File::open(log_path()) else {
        return Vec::new();
    };
    if file.lock_shared().is_err() {
        return Vec::new();
    }
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let _ = file.unlock();
    parse_log(&text).1
}

fn now() -> (i64, i64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (now.as_secs() as i64, i64::from(now.subsec_nanos()))
}

/// Gives each event its `time` and `eid` and appends them to the log (then tells the
/// zedlets, `zed`).
pub fn post(events: Vec<Event>) {
    if events.is_empty() {
        return;
    }
    let mut posted = Vec::with_capacity(events.len());
    let result = update_log(|next_eid, kept| {
        for mut event in events {
            let (secs, nanos) = now();
            event.push("time", Value::I64Array(vec![secs, nanos]));
            event.push("eid", Value::U64(*next_eid));
            *next_eid += 1;
            kept.push(event.clone());
            posted.push(event);
        }
    });
    if result.is_ok() {
        crate::daemon::zed::notify(&posted);
    }
    if let Err(e) = result {
        crate::daemon::log::log(
            crate::daemon::log::Level::Error,
            &format!(
                "zetta: cannot write '{}': {}",
                log_path().display(),
                super::pool::strerror(&e)
            ),
        );
    }
}

/// Empties the log; returns how many events it held.
fn clear_log() -> std::io::Result<usize> {
    let mut count = 0;
    update_log(|_, events| {
        count = events.len();
        events.clear();
    })?;
    Ok(count)
}

// ---- building events ----

/// `vdev_state_t` of a vdev state (`zpool_state_to_name` reads it back).
fn vdev_state_code(state: VdevState) -> u64 {
    match state {
        VdevState::Offline => 2,
        VdevState::Removed => 3,
        VdevState::Unavail => 4,
        VdevState::Faulted => 5,
        VdevState::Degraded => 6,
        VdevState::Online => 7,
    }
}

/// `zpool_state_to_name(state, VDEV_AUX_NONE)`.
pub(crate) fn vdev_state_name(code: u64) -> &'static str {
    match code {
        1 => "CLOSED",
        2 => "OFFLINE",
        3 => "REMOVED",
        4 => "UNAVAIL",
        5 => "FAULTED",
        6 => "DEGRADED",
        7 => "ONLINE",
        _ => "UNKNOWN",
    }
}

/// The leaf (or any vdev) with `guid` and its parent.
fn find_vdev(root: &Vdev, guid: u64) -> Option<(&Vdev, Option<&Vdev>)> {
    fn walk<'a>(
        vdev: &'a Vdev,
        parent: Option<&'a Vdev>,
        guid: u64,
    ) -> Option<(&'a Vdev, Option<&'a Vdev>)> {
        if vdev.guid.0 == guid {
            return Some((vdev, parent));
        }
        vdev.children.iter().find_map(|c| walk(c, Some(vdev), guid))
    }
    walk(root, None, guid)
}

/// `zio_priority_t`: a synchronous read, and a scrub's or resilver's I/O.
pub const ZIO_PRIORITY_SYNC_READ: u32 = 0;
pub const ZIO_PRIORITY_SCRUB: u32 = 4;

/// A monotonic ENA of format 1 (`fm_ena_generate`): time in the high bits.
fn ena() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let hrtime = (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64);
    (hrtime << 12) | 1
}

/// The start every ereport shares (`zfs_ereport_start`): class, ena, detector, pool.
fn ereport_start(spa: &Spa, subclass: &str, vdev_guid: u64) -> Event {
    let mut detector = vec![
        ("version".to_string(), Value::U8(0)),
        ("scheme".to_string(), Value::Str("zfs".to_string())),
        ("pool".to_string(), Value::U64(spa.guid.0)),
    ];
    if vdev_guid != 0 {
        detector.push(("vdev".to_string(), Value::U64(vdev_guid)));
    }
    let mut event = Event::default();
    event
        .push("class", Value::Str(format!("ereport.fs.zfs.{subclass}")))
        .push("ena", Value::U64(ena()))
        .push("detector", Value::List(detector))
        .push("pool", Value::Str(spa.name.clone()))
        .push("pool_guid", Value::U64(spa.guid.0))
        .push("pool_state", Value::U64(0))
        .push("pool_context", Value::I32(0))
        .push("pool_failmode", Value::Str("wait".to_string()));
    event
}

/// The vdev part of an ereport (`zfs_ereport_start` with a vdev).
fn ereport_vdev(event: &mut Event, vdev: &Vdev, parent: Option<&Vdev>) {
    event
        .push("vdev_guid", Value::U64(vdev.guid.0))
        .push("vdev_type", Value::Str(vdev.type_name().to_string()));
    if !vdev.path.is_empty() {
        event.push("vdev_path", Value::Str(vdev.path.clone()));
    }
    let ashift = parent.map_or(vdev.ashift, |p| p.ashift.max(vdev.ashift));
    if ashift != 0 {
        event.push("vdev_ashift", Value::U64(u64::from(ashift)));
    }
    let stats = &vdev.stats;
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    event
        .push("vdev_read_errors", Value::U64(load(&stats.read_errors)))
        .push("vdev_write_errors", Value::U64(load(&stats.write_errors)))
        .push(
            "vdev_cksum_errors",
            Value::U64(load(&stats.checksum_errors)),
        )
        .push("vdev_delays", Value::U64(0))
        .push("dio_verify_errors", Value::U64(0));
    if let Some(parent) = parent {
        event
            .push("parent_guid", Value::U64(parent.guid.0))
            .push("parent_type", Value::Str(parent.type_name().to_string()));
        if !parent.path.is_empty() {
            event.push("parent_path", Value::Str(parent.path.clone()));
        }
    }
    event
        .push("vdev_spare_paths", Value::StrArray(Vec::new()))
        .push("vdev_spare_guids", Value::U64Array(Vec::new()));
}

/// The zio part of an ereport: what Zetta knows of the failed I/O (OpenZFS's pipeline
/// stage, flags and timings have no counterpart and are left out, not faked).
fn ereport_zio(
    event: &mut Event,
    error: i32,
    priority: Option<u32>,
    offset_bytes: u64,
    size_bytes: u64,
) {
    event.push("zio_err", Value::I32(error));
    if let Some(priority) = priority {
        event.push("zio_priority", Value::U32(priority));
    }
    event
        .push("zio_offset", Value::U64(offset_bytes))
        .push("zio_size", Value::U64(size_bytes));
}

/// A sysevent (`zfs_event_create`): `sysevent.fs.zfs.NAME` of `spa`, of `vdev` when given.
pub fn sysevent(spa: &Spa, name: &str, vdev: Option<&Vdev>) -> Event {
    sysevent_of(&spa.name, spa.guid.0, name, vdev)
}

/// `sysevent` from a pool's name and guid (a pool no longer held, `pool_destroy`).
pub fn sysevent_of(pool: &str, pool_guid: u64, name: &str, vdev: Option<&Vdev>) -> Event {
    let mut event = Event::default();
    event
        .push("version", Value::U8(0))
        .push("class", Value::Str(format!("sysevent.fs.zfs.{name}")))
        .push("pool", Value::Str(pool.to_string()))
        .push("pool_guid", Value::U64(pool_guid))
        .push("pool_state", Value::U64(0))
        .push("pool_context", Value::I32(0));
    if let Some(vdev) = vdev {
        event
            .push("vdev_guid", Value::U64(vdev.guid.0))
            .push("vdev_state", Value::U64(vdev_state_code(vdev.state())));
        if !vdev.path.is_empty() {
            event.push("vdev_path", Value::Str(vdev.path.clone()));
        }
    }
    event
}

/// `resource.fs.zfs.statechange` (`zfs_post_state_change`): `vdev` is now in its current
/// state, was in `last`.
pub fn statechange(spa: &Spa, vdev: &Vdev, last: VdevState) -> Event {
    let mut event = sysevent(spa, "statechange", Some(vdev));
    if let Some((_, Value::Str(class))) = event.fields.iter_mut().find(|(n, _)| n == "class") {
        *class = "resource.fs.zfs.statechange".to_string();
    }
    event.push("vdev_laststate", Value::U64(vdev_state_code(last)));
    event
}

/// The full event of an engine moment, when it belongs to `spa`.
fn build(spa: &Spa, raw: &EngineEvent) -> Option<Event> {
    match raw {
        EngineEvent::Checksum {
            vdev_guid,
            offset_bytes,
            size_bytes,
            ..
        }
        | EngineEvent::Io {
            vdev_guid,
            offset_bytes,
            size_bytes,
            ..
        } => {
            let (vdev, parent) = find_vdev(&spa.root, *vdev_guid)?;
            let (subclass, error) = match raw {
                EngineEvent::Io { .. } => ("io", EIO),
                _ => ("checksum", ECKSUM),
            };
            let mut event = ereport_start(spa, subclass, *vdev_guid);
            ereport_vdev(&mut event, vdev, parent.filter(|p| p.guid != spa.root.guid));
            // Whether a scan met the damage is the one zio fact the diagnosis reads
            // (`zio_priority`: ZIO_PRIORITY_SCRUB, else a read's ZIO_PRIORITY_SYNC_READ).
            let priority = match raw {
                EngineEvent::Checksum { scan: true, .. } => Some(ZIO_PRIORITY_SCRUB),
                EngineEvent::Checksum { .. } => Some(ZIO_PRIORITY_SYNC_READ),
                _ => None,
            };
            ereport_zio(&mut event, error, priority, *offset_bytes, *size_bytes);
            Some(event)
        }
        EngineEvent::Data {
            root_guid,
            bookmark,
        } => {
            if *root_guid != spa.root.guid.0 {
                return None;
            }
            let mut event = ereport_start(spa, "data", 0);
            event
                .push("zio_err", Value::I32(ECKSUM))
                .push("zio_objset", Value::U64(bookmark.objset))
                .push("zio_object", Value::U64(bookmark.object))
                .push("zio_level", Value::I64(i64::from(bookmark.level)))
                .push("zio_blkid", Value::U64(bookmark.blkid));
            Some(event)
        }
        EngineEvent::ScanStart {
            pool_guid,
            resilver,
        } => (*pool_guid == spa.guid.0).then(|| {
            let name = if *resilver {
                "resilver_start"
            } else {
                "scrub_start"
            };
            sysevent(spa, name, None)
        }),
        EngineEvent::ScanFinish {
            pool_guid,
            resilver,
            canceled,
        } => (*pool_guid == spa.guid.0).then(|| {
            let name = match (resilver, canceled) {
                (true, _) => "resilver_finish",
                (false, true) => "scrub_abort",
                (false, false) => "scrub_finish",
            };
            sysevent(spa, name, None)
        }),
    }
}

/// Orders the pumps of this process (see the module comment).
static PUMP: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// Turns the engine's queued moments into events and posts them, then posts `extra`
/// (sysevents of the caller, after what the engine saw before them). `held` is a pool
/// the caller holds (its lock): its moments are built from it; other pools are looked up
/// in the daemon's registry without waiting on their locks, and moments of pools that
/// are busy stay queued for the next pump.
pub fn pump(held: Option<&Spa>, extra: Vec<Event>) {
    let _order = PUMP.lock();
    let (raw, _dropped) = zetta::spa::events::take();
    let mut events = Vec::new();
    let mut later = Vec::new();
    let pools = crate::daemon::registry::get()
        .map(|r| r.all())
        .unwrap_or_default();

    for moment in raw {
        if let Some(event) = held.and_then(|spa| build(spa, &moment)) {
            events.push(event);
            continue;
        }
        if !later.is_empty() {
            // After a moment that must wait, the others of other pools wait too.
            later.push(moment);
            continue;
        }
        let mut busy = false;
        let mut built = None;
        for pool in &pools {
            let Some(spa) = pool.try_read_for(std::time::Duration::from_millis(20)) else {
                busy = true;
                continue;
            };
            if let Some(event) = build(&spa, &moment) {
                built = Some(event);
                break;
            }
        }
        match built {
            Some(event) => events.push(event),
            None if busy => later.push(moment),
            // Its pool is no longer held (exported meanwhile): nothing to say.
            None => {}
        }
    }
    zetta::spa::events::put_back(later);
    events.extend(extra);
    post(events);
}

/// Starts listening to the engine and a thread that pumps every second (the daemon).
pub fn start_daemon_pump() {
    zetta::spa::events::listen(true);
    std::thread::spawn(|| loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        pump(None, Vec::new());
    });
}

// ---- printing ----

/// `zpool_do_events_short`'s time: "Nov 28 2026 00:10:00.123456789" (local time).
fn short_time(secs: i64, nanos: i64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = secs as libc::time_t;
    // SAFETY: `tm` is plain data that localtime_r fills before it is read.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return format!("{secs}.{nanos:09}");
        }
        tm
    };
    format!(
        "{} {:>2} {:04} {:02}:{:02}:{:02}.{:09}",
        MONTHS.get(tm.tm_mon as usize).copied().unwrap_or("???"),
        tm.tm_mday,
        tm.tm_year + 1900,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        nanos
    )
}

/// `zpool_do_events_nvprint`.
fn nvprint(fields: &[(String, Value)], depth: usize, text: &mut String) {
    for (name, value) in fields {
        text.push_str(&format!("{:depth$}{name} = ", ""));
        match value {
            Value::U8(v) => text.push_str(&format!("0x{v:x}")),
            Value::I32(v) => text.push_str(&format!("0x{:x}", *v as u32)),
            Value::U32(v) => text.push_str(&format!("0x{v:x}")),
            Value::U64(v) if name == "vdev_state" || name == "vdev_laststate" => {
                text.push_str(&format!("\"{}\" (0x{v:x})", vdev_state_name(*v)))
            }
            Value::U64(v) => text.push_str(&format!("0x{v:x}")),
            Value::I64(v) => text.push_str(&format!("0x{:x}", *v as u64)),
            Value::Str(s) => text.push_str(&format!("\"{s}\"")),
            Value::List(list) => {
                text.push_str("(embedded nvlist)\n");
                nvprint(list, depth + 8, text);
                text.push_str(&format!("{:depth$}(end {name})", ""));
            }
            Value::I64Array(a) => {
                for v in a {
                    text.push_str(&format!("0x{:x} ", *v as u64));
                }
            }
            Value::U64Array(a) => {
                for v in a {
                    text.push_str(&format!("0x{v:x} "));
                }
            }
            Value::StrArray(a) => {
                for s in a {
                    text.push_str(&format!("\"{s}\" "));
                }
            }
        }
        text.push('\n');
    }
}

/// One event as `zpool events` prints it (`-H`: tab after the time; `-v`: its nvpairs).
pub fn format_event(event: &Event, scripted: bool, verbose: bool) -> String {
    let (secs, nanos) = event.time();
    let mut text = short_time(secs, nanos);
    text.push(if scripted { '\t' } else { ' ' });
    text.push_str(event.class());
    text.push('\n');
    if verbose {
        nvprint(&event.fields, 8, &mut text);
        text.push('\n');
    }
    text
}

/// `zpool events [-vHf [pool] | -c]`.
pub fn cmd_events(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "vHfc")?;
    let (verbose, scripted, follow, clear) = (
        parsed.has('v'),
        parsed.has('H'),
        parsed.has('f'),
        parsed.has('c'),
    );
    if parsed.operands.len() > 1 {
        return usage("too many arguments");
    }
    let pool = parsed.operands.first().cloned();
    if let Some(name) = &pool {
        if zetta::spa::check_pool_name(name).is_err() {
            return usage(format!("invalid pool name '{name}'"));
        }
    }
    if (pool.is_some() || verbose || scripted || follow) && clear {
        return usage("invalid options combined with -c");
    }
    // What the engine saw until now is in the log before it is read.
    if crate::daemon::registry::get().is_some() {
        pump(None, Vec::new());
    }
    if clear {
        let count = clear_log().map_err(|e| {
            CmdError::Fail(format!(
                "cannot clear events: {}",
                super::pool::strerror(&e)
            ))
        })?;
        ctx.print(&format!("cleared {count} events\n"));
        return Ok(());
    }
    if !scripted {
        ctx.print(&format!("{:<30} {}\n", "TIME", "CLASS"));
    }
    let mut last_eid = 0;
    loop {
        for event in read_log() {
            let eid = event.u64("eid").unwrap_or(0);
            if eid <= last_eid {
                continue;
            }
            last_eid = eid;
            if let (Some(want), Some(name)) = (&pool, event.string("pool")) {
                if want != name {
                    continue;
                }
            }
            let text = format_event(&event, scripted, verbose);
            if ctx.out.write_all(text.as_bytes()).is_err() {
                return Ok(());
            }
        }
        if !follow {
            return Ok(());
        }
        let _ = ctx.out.flush();
        if !crate::daemon::wait_interval(0.25) {
            return Ok(());
        }
        if crate::daemon::registry::get().is_some() {
            pump(None, Vec::new());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events round-trip through the log's line format, strings with separators too.
    #[test]
    fn log_lines_round_trip() {
        let mut event = Event::default();
        event
            .push("class", Value::Str("sysevent.fs.zfs.scrub_start".into()))
            .push("pool", Value::Str("a b\tc%d,e\n".into()))
            .push("pool_context", Value::I32(-1))
            .push(
                "detector",
                Value::List(vec![("vdev".into(), Value::U64(u64::MAX))]),
            )
            .push("time", Value::I64Array(vec![1, 2]))
            .push(
                "vdev_spare_paths",
                Value::StrArray(vec!["x y".into(), "".into()]),
            )
            .push("vdev_spare_guids", Value::U64Array(vec![]))
            .push("eid", Value::U64(7));
        let text = render_log(8, std::slice::from_ref(&event));
        let (next, events) = parse_log(&text);
        assert_eq!(next, 8);
        assert_eq!(events, vec![event]);
        // A torn last line is skipped, and the next eid never goes back.
        let (next, events) = parse_log(&format!("{text}zio_err=i:"));
        assert_eq!((next, events.len()), (8, 1));
    }

    /// `-v` prints nvpairs as `zpool_do_events_nvprint` does.
    #[test]
    fn nvprint_matches_openzfs() {
        let fields = vec![
            (
                "class".to_string(),
                Value::Str("ereport.fs.zfs.checksum".into()),
            ),
            (
                "detector".to_string(),
                Value::List(vec![("version".into(), Value::U8(0))]),
            ),
            ("vdev_state".to_string(), Value::U64(7)),
            ("pool_context".to_string(), Value::I32(0)),
            ("time".to_string(), Value::I64Array(vec![16, 255])),
        ];
        let mut text = String::new();
        nvprint(&fields, 8, &mut text);
        assert_eq!(
            text,
            "        class = \"ereport.fs.zfs.checksum\"\n        detector = (embedded nvlist)\n                version = 0x0\n        (end detector)\n        vdev_state = \"ONLINE\" (0x7)\n        pool_context = 0x0\n        time = 0x10 0xff \n"
        );
    }
}
