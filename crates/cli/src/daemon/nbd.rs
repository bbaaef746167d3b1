//! The daemon's NBD server: every volume of every pool the daemon holds is exported on a
//! Unix socket `<run dir>/nbd/<pool>/<volume>` (for `tank/vm/disk0`:
//! `<run dir>/nbd/tank/vm/disk0`), so `qemu-img`, `qemu-nbd`, `nbdcopy` and friends reach
//! it as `nbd+unix:///tank/vm/disk0?socket=<that path>`.
//!
//! TCP on request: the user property `org.zetta:sharenbd` (inherited, as `sharenfs` is;
//! OpenZFS has no NBD, and Solaris ZFS asked for a volume's network export the same way,
//! with `shareiscsi`) set to `on` (loopback, `127.0.0.1:10809`, NBD's IANA port) or to an
//! `ADDRESS:PORT` exports the volume on that TCP address too, by its full name:
//! `nbd://127.0.0.1:10809/tank/vm/disk0`. One listener per address serves every volume
//! that names it (NBD_OPT_LIST lists them); `off` or no value: no TCP. There is no
//! authentication and no TLS (the NBD spec's STARTTLS is not offered): loopback gives
//! every local user the volume's bytes (the Unix socket is 0600, root's), and an address
//! other than loopback every host that reaches it, as an unauthenticated iSCSI target
//! would. A value that is no address is refused by `zfs set` (one arriving in a received
//! stream, or an address that cannot be bound, is logged to the daemon's log and leaves the
//! volume on its Unix socket only).
//!
//! Protocol (the NBD spec's "fixed newstyle" negotiation): `NBD_OPT_EXPORT_NAME`,
//! `NBD_OPT_GO`/`NBD_OPT_INFO` (export size and flags, block sizes: minimum 1, preferred
//! `volblocksize`, maximum 32 MiB), `NBD_OPT_LIST`, `NBD_OPT_ABORT`; other options are
//! answered `NBD_REP_ERR_UNSUP`. An export name may be empty (the socket's volume), the
//! volume's full name, or its last component. Simple replies only (no client needs
//! structured replies for these commands). Commands: READ, WRITE (with `NBD_CMD_FLAG_FUA`),
//! FLUSH, TRIM, WRITE_ZEROES, DISC; anything else gets EINVAL.
//!
//! Theory. Durability: every write and free is logged in the volume's intent log
//! (`zetta::zvol`, OpenZFS's `zvol_log_write`); FLUSH commits that log
//! (`Spa::volume_commit`, a few log blocks and a device flush, or a txg commit when the
//! volume has no log yet), so every write acknowledged before it is on stable storage when
//! its reply leaves, and a FUA write does the same after its data is logged. The volume's
//! `sync` property decides as it does for OpenZFS's zvols: `always` commits after every
//! write, `disabled` makes FLUSH and FUA return at once (data lands with the next txg).
//! `reconcile` reads it after every command into the export (`Export::sync`), which its
//! connections read at each request, so `zfs set sync=` applies to open connections. A hostile client never panics the daemon: a bad request magic or a payload
//! larger than `MAX_REQUEST_BYTES` ends its connection; a range past the volume's end is
//! EINVAL (ENOSPC for writes, as the spec asks); pool refusals map to ENOSPC, EDQUOT→ENOSPC,
//! EPERM (read-only), else EIO.
//!
//! Threads and locking: one accept thread per export (and per TCP address), one thread
//! per connection. A
//! request takes the pool's lock exclusively for the one volume operation (as a FUSE
//! write does) and never holds it across socket I/O; FLUSH and FUA take it once more for
//! the log commit, as a FUSE fsync does. The export table
//! (`EXPORTS`, then `TCP_EXPORTS`) is a mutex taken only by `reconcile` (after each
//! command that can add, remove or rename a volume, and at start) and never while a pool
//! lock is held; a TCP listener's volume table is a mutex of its own, taken by
//! `reconcile` to replace it and by a connection's negotiation to look a name up. An
//! export removed (destroy, rename, export of its pool) stops accepting; its open
//! connections get EIO (ENOENT of the old name) on their next request.

use super::registry::{self, PoolRef};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use zetta::spa::{Spa, SpaError};

/// The export threads hold the pool weakly: `zpool export` must be able to take it away
/// (`into_spa` waits only for brief holders); each request holds it for its own length.
type PoolWeak = Weak<parking_lot::RwLock<Spa>>;

const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

const FLAG_FIXED_NEWSTYLE: u16 = 1;
const FLAG_NO_ZEROES: u16 = 2;
const CLIENT_NO_ZEROES: u32 = 2;

const OPT_EXPORT_NAME: u32 = 1;
const OPT_ABORT: u32 = 2;
const OPT_LIST: u32 = 3;
const OPT_INFO: u32 = 6;
const OPT_GO: u32 = 7;

const REP_ACK: u32 = 1;
const REP_SERVER: u32 = 2;
const REP_INFO: u32 = 3;
const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
const REP_ERR_INVALID: u32 = (1 << 31) + 3;
const REP_ERR_UNKNOWN: u32 = (1 << 31) + 6;

const INFO_EXPORT: u16 = 0;
const INFO_BLOCK_SIZE: u16 = 3;

const TX_HAS_FLAGS: u16 = 1;
const TX_READ_ONLY: u16 = 2;
const TX_SEND_FLUSH: u16 = 4;
const TX_SEND_FUA: u16 = 8;
const TX_SEND_TRIM: u16 = 32;
const TX_SEND_WRITE_ZEROES: u16 = 64;

const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;
const CMD_DISC: u16 = 2;
const CMD_FLUSH: u16 = 3;
const CMD_TRIM: u16 = 4;
const CMD_WRITE_ZEROES: u16 = 6;
const CMD_FLAG_FUA: u16 = 1;

const EPERM: u32 = 1;
const EIO: u32 = 5;
const EINVAL: u32 = 22;
const ENOSPC: u32 = 28;

/// The largest READ or WRITE payload (and option) accepted: the maximum block size we
/// advertise. A larger WRITE ends the connection (its payload cannot be skipped safely).
const MAX_REQUEST_BYTES: u32 = 32 << 20;
/// The largest option payload read during negotiation.
const MAX_OPTION_BYTES: u32 = 64 << 10;

/// One exported volume: its accept thread stops when `stop` is set and it is woken.
struct Export {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    /// The volume's `sync` property (`SYNC_*`), kept current by `reconcile`.
    sync: Arc<AtomicU8>,
}

pub(super) const SYNC_STANDARD: u8 = 0;
pub(super) const SYNC_ALWAYS: u8 = 1;
pub(super) const SYNC_DISABLED: u8 = 2;

/// The user property that asks for a volume's export over TCP (module header).
pub const SHARENBD_PROP: &str = zetta_zprop::user_prop::SHARENBD;
/// `org.zetta:sharenbd=on`: loopback only, on the port IANA gives NBD.
pub const SHARENBD_DEFAULT: &str = zetta_zprop::user_prop::SHARENBD_DEFAULT;

/// The TCP address a volume's `org.zetta:sharenbd` value asks for: `None` for `off`, an
/// unset property or a value that is no `ADDRESS:PORT` (`zfs set` refuses those; one
/// received in a stream is logged).
fn sharenbd_address(name: &str, value: Option<&str>) -> Option<SocketAddr> {
    let value = match value? {
        "" | "-" => return None,
        other => other,
    };
    match zetta_zprop::user_prop::sharenbd_address(value) {
        Ok(address) => address,
        Err(_) => {
            eprintln!(
                "zetta: {name}: {SHARENBD_PROP}={value}: not 'on', 'off' or ADDRESS:PORT; \
                 no TCP export"
            );
            None
        }
    }
}

/// What `reconcile` reads of each volume's properties.
#[derive(Clone, Copy)]
struct VolumeProps {
    /// `sync` (`SYNC_*`).
    sync: u8,
    /// `volmode=none`: no block device.
    hidden: bool,
    /// `org.zetta:sharenbd`: the TCP address to export it on.
    tcp: Option<SocketAddr>,
}

/// The properties of every volume of `spa` named in `names` that `reconcile` needs.
fn volume_props(spa: &mut Spa, names: &[String]) -> Vec<VolumeProps> {
    // Unreadable properties: the defaults, `standard` (FLUSH and FUA commit the log).
    let Ok(props) = crate::zfs::load_spa_props(spa) else {
        let default = VolumeProps {
            sync: SYNC_STANDARD,
            hidden: false,
            tcp: None,
        };
        return vec![default; names.len()];
    };
    names
        .iter()
        .map(|name| {
            let value = |prop: &str| zetta_zprop::resolve(&props, name, prop).map(|r| r.value);
            let sync = match value("sync").as_deref() {
                Some("always") => SYNC_ALWAYS,
                Some("disabled") => SYNC_DISABLED,
                _ => SYNC_STANDARD,
            };
            VolumeProps {
                sync,
                hidden: value("volmode").as_deref() == Some("none"),
                tcp: sharenbd_address(name, value(SHARENBD_PROP).as_deref()),
            }
        })
        .collect()
}

static EXPORTS: Mutex<Option<HashMap<String, Export>>> = Mutex::new(None);

/// What a connection needs of the volume it asked for.
#[derive(Clone)]
struct Target {
    volume: String,
    pool: PoolWeak,
    sync: Arc<AtomicU8>,
}

/// The volumes one TCP listener serves, by full name; `reconcile` replaces it whole.
type TcpVolumes = Arc<Mutex<HashMap<String, Target>>>;

/// One TCP listener: its accept thread stops when `stop` is set and it is woken.
struct TcpExport {
    stop: Arc<AtomicBool>,
    volumes: TcpVolumes,
}

/// The TCP listeners by address (`org.zetta:sharenbd`). Taken only by `reconcile`, after
/// `EXPORTS`.
static TCP_EXPORTS: Mutex<Option<HashMap<SocketAddr, TcpExport>>> = Mutex::new(None);

/// Where the socket of volume `name` lives.
pub fn socket_path(name: &str) -> PathBuf {
    super::run_dir().join("nbd").join(name)
}

/// Makes the exports match the volumes of the pools held: new volumes get a socket,
/// vanished ones (destroyed, renamed, pool exported) lose theirs.
pub fn reconcile() {
    let Some(registry) = registry::get() else {
        return;
    };
    let mut wanted: HashMap<String, (PoolRef, u8)> = HashMap::new();
    let mut tcp_wanted: Vec<(String, SocketAddr, PoolWeak)> = Vec::new();
    let mut devices = Vec::new();
    for pool in registry.all() {
        let volumes = {
            let mut spa = pool.write();
            // Volumes of an imported OpenZFS pool are recognised, not read yet: no export.
            if spa.openzfs().is_some() {
                continue;
            }
            let names = spa.dataset_names().unwrap_or_default();
            let mut volumes = Vec::new();
            for name in names.into_iter().filter(|n| !n.contains('%')) {
                if let Ok(Some(info)) = spa.volume_info(&name) {
                    volumes.push((name, info));
                }
            }
            let names: Vec<String> = volumes.iter().map(|(n, _)| n.clone()).collect();
            let props = if names.is_empty() {
                Vec::new()
            } else {
                volume_props(&mut spa, &names)
            };
            volumes.into_iter().zip(props).collect::<Vec<_>>()
        };
        for ((name, info), props) in volumes {
            devices.push(super::zvol_dev::VolumeView {
                name: name.clone(),
                size_bytes: info.size_bytes,
                block_size_bytes: info.block_size_bytes,
                pool: pool.clone(),
                sync: props.sync,
                hidden: props.hidden,
            });
            if let Some(address) = props.tcp {
                tcp_wanted.push((name.clone(), address, Arc::downgrade(&pool)));
            }
            wanted.insert(name, (pool.clone(), props.sync));
        }
    }
    super::zvol_dev::reconcile(devices);
    let mut table = EXPORTS.lock();
    let exports = table.get_or_insert_with(HashMap::new);
    let gone: Vec<String> = exports
        .keys()
        .filter(|n| !wanted.contains_key(*n))
        .cloned()
        .collect();
    for name in gone {
        if let Some(export) = exports.remove(&name) {
            export.stop.store(true, Ordering::SeqCst);
            // Wakes the accept thread, which sees `stop` and ends.
            let _ = UnixStream::connect(&export.path);
            let _ = std::fs::remove_file(&export.path);
        }
    }
    for (name, (pool, mode)) in wanted {
        if let Some(export) = exports.get(&name) {
            export.sync.store(mode, Ordering::SeqCst);
            continue;
        }
        if let Some(export) = start(&name, Arc::downgrade(&pool), mode) {
            exports.insert(name, export);
        }
    }
    // TCP: each address serves the volumes that name it, with their Unix exports' sync.
    let mut by_address: HashMap<SocketAddr, HashMap<String, Target>> = HashMap::new();
    for (name, address, pool) in tcp_wanted {
        let Some(export) = exports.get(&name) else {
            continue;
        };
        let target = Target {
            volume: name.clone(),
            pool,
            sync: export.sync.clone(),
        };
        by_address.entry(address).or_default().insert(name, target);
    }
    reconcile_tcp(by_address);
}

/// Makes the TCP listeners match `wanted`: new addresses bound, vanished ones stopped, the
/// volume table of the others replaced (their open connections keep their volume until
/// their next request finds it gone from the pool).
fn reconcile_tcp(mut wanted: HashMap<SocketAddr, HashMap<String, Target>>) {
    let mut table = TCP_EXPORTS.lock();
    let listeners = table.get_or_insert_with(HashMap::new);
    let gone: Vec<SocketAddr> = listeners
        .keys()
        .filter(|a| !wanted.contains_key(*a))
        .copied()
        .collect();
    for address in gone {
        if let Some(listener) = listeners.remove(&address) {
            listener.stop.store(true, Ordering::SeqCst);
            // Wakes the accept thread, which sees `stop` and ends (and closes the port).
            let _ = TcpStream::connect_timeout(&address, std::time::Duration::from_secs(1));
        }
    }
    for (address, volumes) in wanted.drain() {
        if let Some(listener) = listeners.get(&address) {
            *listener.volumes.lock() = volumes;
            continue;
        }
        if let Some(listener) = start_tcp(address, volumes) {
            listeners.insert(address, listener);
        }
    }
}

/// Binds `address` and starts its accept thread.
fn start_tcp(address: SocketAddr, volumes: HashMap<String, Target>) -> Option<TcpExport> {
    let listener = match TcpListener::bind(address) {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("zetta: {SHARENBD_PROP}: cannot listen on {address}: {e}");
            return None;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let volumes: TcpVolumes = Arc::new(Mutex::new(volumes));
    let (flag, table) = (stop.clone(), volumes.clone());
    std::thread::Builder::new()
        .name(format!("nbd tcp {address}"))
        .spawn(move || {
            for stream in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                // Small replies (one per request) must not wait for Nagle.
                let _ = stream.set_nodelay(true);
                let table = table.clone();
                let _ = std::thread::Builder::new()
                    .name("nbd tcp client".to_string())
                    .spawn(move || {
                        let find =
                            |asked: &str| table.lock().get(asked.trim_start_matches('/')).cloned();
                        let names = || {
                            let mut names: Vec<String> = table.lock().keys().cloned().collect();
                            names.sort();
                            names
                        };
                        let _ = serve(stream, &find, &names);
                    });
            }
        })
        .ok()?;
    Some(TcpExport { stop, volumes })
}

/// Binds the socket of volume `name` and starts its accept thread.
fn start(name: &str, pool: PoolWeak, sync_mode: u8) -> Option<Export> {
    let path = socket_path(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).ok()?;
    }
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).ok()?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let sync = Arc::new(AtomicU8::new(sync_mode));
    let mode = sync.clone();
    let volume = name.to_string();
    std::thread::Builder::new()
        .name(format!("nbd {name}"))
        .spawn(move || {
            for stream in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let target = Target {
                    volume: volume.clone(),
                    pool: pool.clone(),
                    sync: mode.clone(),
                };
                let _ = std::thread::Builder::new()
                    .name("nbd client".to_string())
                    .spawn(move || {
                        let find = |asked: &str| {
                            names_volume(asked, &target.volume).then(|| target.clone())
                        };
                        let names = || vec![target.volume.clone()];
                        let _ = serve(stream, &find, &names);
                    });
            }
        })
        .ok()?;
    Some(Export { path, stop, sync })
}

fn read_u16(s: &mut impl Read) -> std::io::Result<u16> {
    let mut b = [0u8; 2];
    s.read_exact(&mut b)?;
    Ok(u16::from_be_bytes(b))
}

fn read_u32(s: &mut impl Read) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    s.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64(s: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    s.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn read_bytes(s: &mut impl Read, len: u32) -> std::io::Result<Vec<u8>> {
    let mut data = vec![0u8; len as usize];
    s.read_exact(&mut data)?;
    Ok(data)
}

fn bad(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string())
}

/// An option reply.
fn option_reply(s: &mut impl Write, option: u32, kind: u32, data: &[u8]) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(20 + data.len());
    out.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
    s.write_all(&out)
}

/// Whether `asked` names the volume of this socket.
fn names_volume(asked: &str, volume: &str) -> bool {
    asked.is_empty()
        || asked == volume
        || asked.trim_start_matches('/') == volume
        || volume.rsplit('/').next() == Some(asked)
}

/// The volume's size and block size, and whether the pool is read-only.
fn shape(pool: &PoolWeak, volume: &str) -> Option<(u64, u64, bool)> {
    let pool = pool.upgrade()?;
    let mut spa = pool.write();
    let readonly = spa.readonly;
    let info = spa.volume_info(volume).ok().flatten()?;
    Some((info.size_bytes, info.block_size_bytes, readonly))
}

fn transmission_flags(readonly: bool) -> u16 {
    let mut flags =
        TX_HAS_FLAGS | TX_SEND_FLUSH | TX_SEND_FUA | TX_SEND_TRIM | TX_SEND_WRITE_ZEROES;
    if readonly {
        flags |= TX_READ_ONLY;
    }
    flags
}

/// One connection: negotiation, then requests until DISC or the client goes away. `find`
/// gives the volume an export name names (a Unix socket: its one volume; TCP: any of its
/// listener's by full name), `names` what NBD_OPT_LIST lists.
fn serve<S: Read + Write>(
    mut s: S,
    find: &dyn Fn(&str) -> Option<Target>,
    names: &dyn Fn() -> Vec<String>,
) -> std::io::Result<()> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&hello)?;
    let client_flags = read_u32(&mut s)?;
    loop {
        if read_u64(&mut s)? != IHAVEOPT {
            return Err(bad("bad option magic"));
        }
        let option = read_u32(&mut s)?;
        let len = read_u32(&mut s)?;
        if len > MAX_OPTION_BYTES {
            return Err(bad("option too long"));
        }
        let data = read_bytes(&mut s, len)?;
        match option {
            OPT_EXPORT_NAME => {
                let asked = String::from_utf8_lossy(&data);
                let Some((target, (size, _, readonly))) =
                    find(&asked).and_then(|t| shape(&t.pool, &t.volume).map(|shape| (t, shape)))
                else {
                    // The spec's only answer to an unknown name here: close.
                    return Ok(());
                };
                let mut out = Vec::with_capacity(134);
                out.extend_from_slice(&size.to_be_bytes());
                out.extend_from_slice(&transmission_flags(readonly).to_be_bytes());
                if client_flags & CLIENT_NO_ZEROES == 0 {
                    out.extend_from_slice(&[0u8; 124]);
                }
                s.write_all(&out)?;
                return transmit(s, &target.pool, &target.volume, &target.sync);
            }
            OPT_ABORT => {
                let _ = option_reply(&mut s, option, REP_ACK, &[]);
                return Ok(());
            }
            OPT_LIST => {
                if !data.is_empty() {
                    option_reply(&mut s, option, REP_ERR_INVALID, &[])?;
                    continue;
                }
                for volume in names() {
                    let mut entry = Vec::new();
                    entry.extend_from_slice(&(volume.len() as u32).to_be_bytes());
                    entry.extend_from_slice(volume.as_bytes());
                    option_reply(&mut s, option, REP_SERVER, &entry)?;
                }
                option_reply(&mut s, option, REP_ACK, &[])?;
            }
            OPT_INFO | OPT_GO => {
                let asked = data
                    .get(0..4)
                    .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
                    .and_then(|n| data.get(4..4 + n))
                    .map(|b| String::from_utf8_lossy(b).into_owned());
                let Some(asked) = asked else {
                    option_reply(&mut s, option, REP_ERR_INVALID, &[])?;
                    continue;
                };
                let Some((target, (size, block, readonly))) =
                    find(&asked).and_then(|t| shape(&t.pool, &t.volume).map(|shape| (t, shape)))
                else {
                    option_reply(&mut s, option, REP_ERR_UNKNOWN, &[])?;
                    continue;
                };
                let mut export = Vec::with_capacity(12);
                export.extend_from_slice(&INFO_EXPORT.to_be_bytes());
                export.extend_from_slice(&size.to_be_bytes());
                export.extend_from_slice(&transmission_flags(readonly).to_be_bytes());
                option_reply(&mut s, option, REP_INFO, &export)?;
                let mut sizes = Vec::with_capacity(14);
                sizes.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
                sizes.extend_from_slice(&1u32.to_be_bytes());
                sizes.extend_from_slice(
                    &(block.min(u64::from(MAX_REQUEST_BYTES)) as u32).to_be_bytes(),
                );
                sizes.extend_from_slice(&MAX_REQUEST_BYTES.to_be_bytes());
                option_reply(&mut s, option, REP_INFO, &sizes)?;
                option_reply(&mut s, option, REP_ACK, &[])?;
                if option == OPT_GO {
                    return transmit(s, &target.pool, &target.volume, &target.sync);
                }
            }
            _ => option_reply(&mut s, option, REP_ERR_UNSUP, &[])?,
        }
    }
}

/// The errno a refusal of the pool answers.
fn errno(e: &SpaError, writing: bool) -> u32 {
    match e {
        SpaError::NoSpace | SpaError::QuotaExceeded => ENOSPC,
        SpaError::ReadOnly => EPERM,
        SpaError::Invalid(_) if writing => ENOSPC,
        SpaError::Invalid(_) => EINVAL,
        _ => EIO,
    }
}

fn simple_reply(s: &mut impl Write, error: u32, handle: u64, data: &[u8]) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(16 + data.len());
    out.extend_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&error.to_be_bytes());
    out.extend_from_slice(&handle.to_be_bytes());
    out.extend_from_slice(data);
    s.write_all(&out)
}

/// Makes everything written to `volume` before durable when it returns: its intent log
/// commits (nothing under `sync=disabled`, as OpenZFS's `zil_commit`).
fn flush(pool: &PoolRef, volume: &str, sync: u8) -> Result<(), SpaError> {
    if sync == SYNC_DISABLED {
        return Ok(());
    }
    pool.write().volume_commit(volume).map(|_| ())
}

/// The transmission phase.
fn transmit<S: Read + Write>(
    mut s: S,
    pool: &PoolWeak,
    volume: &str,
    sync: &AtomicU8,
) -> std::io::Result<()> {
    loop {
        if read_u32(&mut s)? != REQUEST_MAGIC {
            return Err(bad("bad request magic"));
        }
        let flags = read_u16(&mut s)?;
        let kind = read_u16(&mut s)?;
        let handle = read_u64(&mut s)?;
        let offset = read_u64(&mut s)?;
        let len = read_u32(&mut s)?;
        if kind == CMD_DISC {
            return Ok(());
        }
        // A WRITE's payload is read before the pool is held (a slow client must not keep
        // `zpool export` waiting); one that cannot be buffered ends the connection.
        let payload = if kind == CMD_WRITE {
            if len > MAX_REQUEST_BYTES {
                return Err(bad("write too long"));
            }
            read_bytes(&mut s, len)?
        } else {
            Vec::new()
        };
        // The pool went away (exported): this connection ends.
        let Some(pool) = pool.upgrade() else {
            return Ok(());
        };
        let mode = sync.load(Ordering::SeqCst);
        let result = request(&pool, volume, mode, kind, flags, offset, len, &payload);
        drop(pool);
        match result {
            Ok(data) => simple_reply(&mut s, 0, handle, &data)?,
            Err(error) => simple_reply(&mut s, error, handle, &[])?,
        }
    }
}

/// One request against the pool: the data read, or the errno of the reply.
#[allow(clippy::too_many_arguments)]
fn request(
    pool: &PoolRef,
    volume: &str,
    sync: u8,
    kind: u16,
    flags: u16,
    offset: u64,
    len: u32,
    payload: &[u8],
) -> Result<Vec<u8>, u32> {
    let durable = |changed: Result<(), SpaError>| match changed {
        Ok(()) if flags & CMD_FLAG_FUA != 0 || sync == SYNC_ALWAYS => {
            flush(pool, volume, sync).map_err(|e| errno(&e, true))
        }
        Ok(()) => Ok(()),
        Err(e) => Err(errno(&e, true)),
    };
    match kind {
        CMD_READ if len > MAX_REQUEST_BYTES => Err(EINVAL),
        CMD_READ => {
            let read = pool.write().volume_read(volume, offset, len as usize);
            read.map_err(|e| errno(&e, false))
        }
        CMD_WRITE => {
            // The write throttle (`dmu::tx::dmu_tx_wait`), before the pool lock is taken.
            zetta::dmu::tx::dmu_tx_throttle(pool);
            let written = pool.write().volume_write(volume, offset, payload);
            durable(written).map(|()| Vec::new())
        }
        CMD_FLUSH => flush(pool, volume, sync)
            .map(|()| Vec::new())
            .map_err(|e| errno(&e, true)),
        CMD_TRIM | CMD_WRITE_ZEROES => {
            let freed = pool.write().volume_free(volume, offset, u64::from(len));
            durable(freed).map(|()| Vec::new())
        }
        _ => Err(EINVAL),
    }
}
