//! End-to-end tests of the `zpool` command: the real binary, invoked through a `zpool`
//! symlink, on sparse 128 MiB files, with its own cache file. They pin the text admins and
//! scripts read (status config tables, list columns, import listings, error messages)
//! and the exit codes (0 ok, 1 failed, 2 usage).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

const DISK_SIZE_BYTES: u64 = 128 << 20;
/// What `Lab::anon` shows instead of the lab directory: as long as the real one, so the
/// expected texts below carry the real column widths (a disk path is 17 characters).
const P: &str = "/tmp/zcDDDDDDDD";

/// A scratch directory with a `zpool` symlink, a cache file and disk files. Its path
/// always has the same length (`/tmp/zc` + 8 hex digits), so column widths in expected
/// outputs are fixed.
struct Lab {
    dir: PathBuf,
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Lab {
    fn new() -> Lab {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let unique = (std::process::id() << 8) ^ COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = PathBuf::from(format!("/tmp/zc{unique:08x}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zetta"), dir.join("zpool")).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zetta"), dir.join("zfs")).unwrap();
        Lab { dir }
    }

    /// Creates a sparse disk file and returns its absolute path.
    fn disk(&self, name: &str, size_bytes: u64) -> String {
        let path = self.dir.join(name);
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(size_bytes).unwrap();
        path.to_string_lossy().into_owned()
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }

    fn zpool(&self, args: &[&str]) -> Output {
        self.command("zpool", args)
    }

    fn zfs(&self, args: &[&str]) -> Output {
        self.command("zfs", args)
    }

    fn command(&self, front: &str, args: &[&str]) -> Output {
        let output = Command::new(self.dir.join(front))
            .args(args)
            .env("ZETTA_CACHE_FILE", self.dir.join("zpool.cache"))
            .env("ZETTA_RUN_DIR", self.dir.join("run"))
            // These tests are about the commands; mounts have their own tests.
            .env("ZETTA_MOUNT", "0")
            .env("TZ", "UTC")
            .output()
            .unwrap();
        Output {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Runs a command that must succeed and returns its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.zpool(args);
        assert_eq!(out.code, 0, "zpool {args:?} failed: {}", out.stderr);
        out.stdout
    }

    /// Replaces the lab directory by `P` (same length, so column padding is kept).
    fn anon(&self, text: &str) -> String {
        text.replace(&self.dir.to_string_lossy().into_owned(), P)
    }
}

impl Lab {
    /// Stops this lab's daemon (it commits its pools; they stay imported).
    fn stop_daemon(&self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_zetta"))
            .args(["daemon", "--stop"])
            .env("ZETTA_RUN_DIR", self.dir.join("run"))
            .output();
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Each lab has its own daemon (started by its first command): stop it.
        self.stop_daemon();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The `config:` table of a status output (from `config:` to the blank line after it).
fn config_section(status: &str) -> String {
    let start = status.find("config:").expect("status has a config section");
    let rest = &status[start..];
    let end = rest.find("\n\nerrors:").expect("status has an errors line");
    rest[..end + 1].to_string()
}

/// The three basic layouts print the OpenZFS tree: leaf at the top level, `mirror-0`,
/// `raidz1-0`, names padded to the widest indented name.
#[test]
fn create_single_mirror_raidz_status_config_exact() {
    let lab = Lab::new();
    let disks: Vec<String> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .map(|n| lab.disk(n, DISK_SIZE_BYTES))
        .collect();
    lab.ok(&["create", "solo", &disks[0]]);
    lab.ok(&["create", "mir", "mirror", &disks[1], &disks[2]]);
    lab.ok(&["create", "rz", "raidz", &disks[3], &disks[4], &disks[5]]);
    let solo = lab.anon(&lab.ok(&["status", "solo"]));
    assert_eq!(
        solo,
        "  pool: solo\n state: ONLINE\nconfig:\n\n\
         \tNAME                 STATE     READ WRITE CKSUM\n\
         \tsolo                 ONLINE       0     0     0\n\
         \t  /tmp/zcDDDDDDDD/a  ONLINE       0     0     0\n\
         \nerrors: No known data errors\n"
    );
    let mirror = lab.anon(&config_section(&lab.ok(&["status", "mir"])));
    assert_eq!(
        mirror,
        "config:\n\n\
         \tNAME                   STATE     READ WRITE CKSUM\n\
         \tmir                    ONLINE       0     0     0\n\
         \t  mirror-0             ONLINE       0     0     0\n\
         \t    /tmp/zcDDDDDDDD/b  ONLINE       0     0     0\n\
         \t    /tmp/zcDDDDDDDD/c  ONLINE       0     0     0\n"
    );
    let raidz = lab.anon(&config_section(&lab.ok(&["status", "rz"])));
    assert!(raidz.contains("\n\t  raidz1-0   "), "{raidz}");
    assert!(
        raidz.contains("\n\t    /tmp/zcDDDDDDDD/f  ONLINE       0     0     0\n"),
        "{raidz}"
    );
    // `zpool list` shows all three, sorted by name.
    let list = lab.ok(&["list", "-H", "-o", "name,health"]);
    assert_eq!(list, "mir\tONLINE\nrz\tONLINE\nsolo\tONLINE\n");
}

/// Scripts read `zpool list -H -o cap` and pick columns by header name.
#[test]
fn list_columns_and_scripted_capacity() {
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    lab.ok(&["create", "tank", &a]);
    assert_eq!(lab.ok(&["list", "-H", "-o", "cap", "tank"]), "0%\n");
    let list = lab.ok(&["list", "-o", "name,size,cap,health,free", "tank"]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines[0], "NAME   SIZE    CAP    HEALTH   FREE");
    assert!(lines[1].starts_with("tank   "), "{list}");
    assert!(lines[1].contains("    0%    ONLINE  "), "{list}");
    let default = lab.ok(&["list"]);
    assert!(default.starts_with(
        "NAME   SIZE  ALLOC   FREE  CKPOINT  EXPANDSZ   FRAG    CAP  DEDUP    HEALTH  ALTROOT\ntank   "
    ), "{default}");
    // FRAG is whatever the free space looks like: on 16 MiB metaslabs the metaslab that
    // takes ditto copies already splits its free segment (OpenZFS counts it alike).
    let row: Vec<&str> = default
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(row.len(), 11, "{default}");
    assert_eq!(&row[4..6], ["-", "-"], "{default}");
    assert!(row[6].ends_with('%'), "{default}");
    assert_eq!(&row[7..], ["0%", "1.00x", "ONLINE", "-"], "{default}");
    assert!(
        default.ends_with("%     0%  1.00x    ONLINE  -\n"),
        "{default}"
    );
    let exact = lab.ok(&["list", "-Hp", "-o", "name,cap,dedup", "tank"]);
    assert_eq!(exact, "tank\t0\t1.00\n");
}

/// `zpool get` prints NAME PROPERTY VALUE SOURCE with OpenZFS's sources, and `set`
/// stores settable properties and refuses read-only ones with OpenZFS's words.
#[test]
fn get_and_set_properties() {
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    lab.ok(&["create", "-o", "ashift=12", "tank", &a]);
    let get = lab.ok(&[
        "get",
        "health,ashift,autoexpand,feature@extensible_dataset",
        "tank",
    ]);
    assert_eq!(
        get,
        "NAME  PROPERTY                    VALUE   SOURCE\n\
         tank  health                      ONLINE  -\n\
         tank  ashift                      12      local\n\
         tank  autoexpand                  off     default\n\
         tank  feature@extensible_dataset  active  local\n"
    );
    lab.ok(&["set", "autoexpand=on", "tank"]);
    assert_eq!(
        lab.ok(&["get", "-H", "-o", "value,source", "autoexpand", "tank"]),
        "on\tlocal\n"
    );
    let all = lab.ok(&["get", "all", "tank"]);
    for property in [
        "size",
        "capacity",
        "guid",
        "failmode",
        "fragmentation",
        "load_guid",
    ] {
        assert!(
            all.contains(&format!("tank  {property} ")),
            "{property} missing:\n{all}"
        );
    }
    let bad = lab.zpool(&["set", "size=1", "tank"]);
    assert_eq!(bad.code, 1);
    assert_eq!(
        bad.stderr,
        "cannot set property for 'tank': 'size' is readonly\n"
    );
    let bad = lab.zpool(&["set", "failmode=sometimes", "tank"]);
    assert_eq!(
        bad.stderr,
        "cannot set property for 'tank': 'failmode' must be one of 'wait | continue | panic'\n"
    );
    let history = lab.anon(&lab.ok(&["history", "tank"]));
    let lines: Vec<&str> = history.lines().collect();
    assert_eq!(lines[0], "History for 'tank':");
    assert!(
        lines[1].ends_with(" zpool create -o ashift=12 tank /tmp/zcDDDDDDDD/a"),
        "{history}"
    );
    assert!(
        lines[2].ends_with(" zpool set autoexpand=on tank"),
        "{history}"
    );
    assert_eq!(lines[1].as_bytes()[10], b'.');
}

/// Export then `import -d` lists the pool in show_import's layout; import under a new
/// name works and the pool is usable under it.
#[test]
fn export_import_listing_and_rename() {
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    let b = lab.disk("b", DISK_SIZE_BYTES);
    lab.ok(&["create", "tank", "mirror", &a, &b]);
    let guid = lab.ok(&["get", "-H", "-o", "value", "guid", "tank"]);
    lab.ok(&["export", "tank"]);
    assert_eq!(lab.ok(&["list"]), "no pools available\n");
    let listing = lab.anon(&lab.ok(&["import", "-d", &lab.dir.to_string_lossy()]));
    let expected = format!(
        "  pool: tank\n    id: {}\n state: ONLINE\n\
         action: The pool can be imported using its name or numeric identifier.\n\
         config:\n\n\
         \ttank                   ONLINE\n\
         \t  mirror-0             ONLINE\n\
         \t    /tmp/zcDDDDDDDD/a  ONLINE\n\
         \t    /tmp/zcDDDDDDDD/b  ONLINE\n",
        guid.trim()
    );
    assert_eq!(listing, expected);
    lab.ok(&[
        "import",
        "-d",
        &lab.dir.to_string_lossy(),
        "tank",
        "newtank",
    ]);
    let status = lab.ok(&["status", "newtank"]);
    assert!(
        status.starts_with("  pool: newtank\n state: ONLINE\n"),
        "{status}"
    );
    assert!(status.contains("\tnewtank "), "{status}");
    // Importing it again by its new name: already imported.
    let again = lab.zpool(&["import", "-d", &lab.dir.to_string_lossy(), "newtank"]);
    assert_eq!(again.code, 1);
    assert_eq!(
        again.stderr,
        "cannot import 'newtank': a pool with that name already exists\nuse the form 'zpool import <pool | id> <newpool>' to give it a new name\n"
    );
    let empty = lab.zpool(&["import", "-d", &lab.dir.to_string_lossy()]);
    assert_eq!(empty.stderr, "no pools available to import\n");
}

/// A pool that lost a whole top-level vdev cannot be imported, `-f` or not; the listing
/// and the refusal are OpenZFS's, word for word. Since format 26 no label carries the
/// whole tree, so, as in OpenZFS, the lost vdev's shape is unknown: not listed, the root
/// says `missing device`, and the "Additional devices" note follows.
#[test]
fn missing_top_level_vdev_refuses_import() {
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    let b = lab.disk("b", DISK_SIZE_BYTES);
    lab.ok(&["create", "test", &a, &b]);
    lab.ok(&["export", "test"]);
    std::fs::remove_file(&b).unwrap();
    let dir = lab.dir.to_string_lossy().into_owned();
    let listing = lab.anon(&lab.ok(&["import", "-d", &dir]));
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines[0], "  pool: test");
    assert!(lines[1].starts_with("    id: "));
    assert_eq!(
        lines[2..].join("\n"),
        "\x20state: UNAVAIL\n\
         status: One or more devices are missing from the system.\n\
         action: The pool cannot be imported. Attach the missing\n\
         \tdevices and try again.\n   \
         see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-6X\n\
         config:\n\n\
         \ttest                 UNAVAIL  missing device\n\
         \t  /tmp/zcDDDDDDDD/a  ONLINE\n\
         \n\
         \tAdditional devices are known to be part of this pool, though their\n\
         \texact configuration cannot be determined."
    );
    for args in [
        vec!["import", "-d", &dir, "test"],
        vec!["import", "-f", "-d", &dir, "test"],
    ] {
        let out = lab.zpool(&args);
        assert_eq!(out.code, 1, "{args:?}");
        assert_eq!(
            out.stderr,
            "cannot import 'test': one or more devices is currently unavailable\n"
        );
    }
}

/// Attach turns a single-device vdev into `mirror-0` and resilvers the new side;
/// detach turns it back. `-w` (scripts such as ZTS's zpool_wait tests pass it) waits for
/// the resilver: the status right after shows it finished.
#[test]
fn attach_resilvers_and_detach_collapses() {
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    let b = lab.disk("b", DISK_SIZE_BYTES);
    lab.ok(&["create", "tank", &a]);
    lab.ok(&["attach", "-w", "tank", &a, &b]);
    let status = lab.anon(&lab.ok(&["status", "tank"]));
    assert!(status.contains("\n  scan: resilvered "), "{status}");
    assert!(status.contains(" with 0 errors on "), "{status}");
    assert!(status.contains("\n\t  mirror-0  "), "{status}");
    assert!(
        status.contains("\n\t    /tmp/zcDDDDDDDD/b  ONLINE       0     0     0\n"),
        "{status}"
    );
    lab.ok(&["detach", "tank", &b]);
    let status = lab.anon(&lab.ok(&["status", "tank"]));
    assert!(!status.contains("mirror-0"), "{status}");
    assert!(
        status.contains("\n\t  /tmp/zcDDDDDDDD/a  ONLINE       0     0     0\n"),
        "{status}"
    );
    let bad = lab.zpool(&["detach", "tank", &a]);
    assert_eq!(bad.code, 1);
    assert_eq!(
        lab.anon(&bad.stderr),
        "cannot detach /tmp/zcDDDDDDDD/a: only applicable to mirror and replacing vdevs\n"
    );
}

/// Garbage written over one side of a mirror is found by scrub: that device's CKSUM
/// counter goes up (and stays up in a later process) and the scan line says repaired.
#[test]
fn scrub_repairs_corrupted_mirror_side() {
    use std::io::{Seek, SeekFrom, Write};
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    let b = lab.disk("b", DISK_SIZE_BYTES);
    lab.ok(&["create", "tank", "mirror", &a, &b]);
    {
        let mut file = std::fs::OpenOptions::new().write(true).open(&b).unwrap();
        file.seek(SeekFrom::Start(4 << 20)).unwrap();
        let garbage: Vec<u8> = (0..(60u32 << 20))
            .map(|i| (i.wrapping_mul(7) + 13) as u8)
            .collect();
        file.write_all(&garbage).unwrap();
    }
    lab.ok(&["scrub", "-w", "tank"]);
    let status = lab.anon(&lab.ok(&["status", "tank"]));
    assert!(status.contains("\n  scan: scrub repaired "), "{status}");
    assert!(!status.contains("scrub repaired 0B"), "{status}");
    let b_row = status
        .lines()
        .find(|l| l.starts_with("\t    /tmp/zcDDDDDDDD/b"))
        .expect("row for the corrupted device");
    let cksum: u64 = b_row.split_whitespace().nth(4).unwrap().parse().unwrap();
    assert!(cksum > 0, "{status}");
    assert!(status.contains("ZFS-8000-9P"), "{status}");
    lab.ok(&["clear", "tank"]);
    assert_eq!(lab.ok(&["status", "-x"]), "all pools are healthy\n");
    let cancel = lab.zpool(&["scrub", "-s", "tank"]);
    assert_eq!(cancel.code, 1);
    assert_eq!(
        cancel.stderr,
        "cannot cancel scrubbing tank: there is no active scrub\n"
    );
}

/// Usage errors exit 2 and print the command's synopsis.
#[test]
fn usage_errors_exit_2() {
    let lab = Lab::new();
    let out = lab.zpool(&[]);
    assert_eq!(out.code, 2);
    assert!(out
        .stderr
        .starts_with("missing command\nusage: zpool command args ...\n"));
    let out = lab.zpool(&["create"]);
    assert_eq!(out.code, 2);
    assert!(out
        .stderr
        .starts_with("missing pool name argument\nusage:\n\tcreate [-fnd]"));
    let out = lab.zpool(&["create", "tank"]);
    assert_eq!(
        (out.code, out.stderr.lines().next()),
        (2, Some("missing vdev specification"))
    );
    let out = lab.zpool(&["status", "-Z"]);
    assert_eq!(
        (out.code, out.stderr.lines().next()),
        (2, Some("invalid option 'Z'"))
    );
    let out = lab.zpool(&["frobnicate"]);
    assert_eq!(
        (out.code, out.stderr.lines().next()),
        (2, Some("unrecognized command 'frobnicate'"))
    );
    let out = lab.zpool(&["status", "nosuch"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "cannot open 'nosuch': no such pool\n")
    );
}

/// `zpool create` refuses what OpenZFS refuses, with its messages.
#[test]
fn create_refusals() {
    let lab = Lab::new();
    let small = lab.disk("small", 32 << 20);
    let a = lab.disk("a", DISK_SIZE_BYTES);
    let b = lab.disk("b", DISK_SIZE_BYTES);
    let c = lab.disk("c", DISK_SIZE_BYTES);
    let out = lab.zpool(&["create", "tank", &small]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "cannot create 'tank': one or more devices is less than the minimum size (64M)\n"
        )
    );
    let out = lab.zpool(&["create", "tank", "a"]);
    assert_eq!(
        out.stderr,
        "cannot open 'a': no such device in /dev\nmust be a full path or shorthand device name\n"
    );
    let missing = lab.path("nosuch");
    let out = lab.zpool(&["create", "tank", &missing]);
    assert_eq!(
        lab.anon(&out.stderr),
        "cannot open '/tmp/zcDDDDDDDD/nosuch': No such file or directory\n"
    );
    let out = lab.zpool(&["create", "tank", "mirror", &a, &b, &c]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // a, b and c now belong to an exported pool: refused unless -f.
    lab.ok(&["export", "tank"]);
    let out = lab.zpool(&["create", "other", &a]);
    assert_eq!(
        lab.anon(&out.stderr),
        "invalid vdev specification\nuse '-f' to override the following errors:\n/tmp/zcDDDDDDDD/a is part of exported pool 'tank'\n"
    );
    let d = lab.disk("d", DISK_SIZE_BYTES);
    let e = lab.disk("e", DISK_SIZE_BYTES);
    let f = lab.disk("f", DISK_SIZE_BYTES);
    lab.ok(&["create", "other", "mirror", &d, &e, &f]);
    // Even a dry run checks the devices first; -f then lets it print the layout.
    let out = lab.zpool(&["create", "third", "-n", "mirror", &a, &b]);
    assert_eq!(out.code, 1);
    let out = lab.zpool(&["create", "-n", "-f", "third", "mirror", &a, &b]);
    assert_eq!(
        lab.anon(&out.stdout),
        "would create 'third' with the following layout:\n\n\tthird\n\t  mirror\n\t    /tmp/zcDDDDDDDD/a\n\t    /tmp/zcDDDDDDDD/b\n"
    );
    let g = lab.disk("g", DISK_SIZE_BYTES);
    let out = lab.zpool(&["add", "other", &g]);
    assert_eq!(
        out.stderr,
        "invalid vdev specification\nuse '-f' to override the following errors:\nmismatched replication level: pool uses mirror and new vdev is file\n"
    );
}

/// A second process holding a device's lock makes commands fail cleanly (exit 1, one
/// clear line) instead of touching the pool.
#[test]
fn locked_device_fails_cleanly() {
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    lab.ok(&["create", "tank", &a]);
    // The daemon holds the pool it created; stop it so the test can take the lock first.
    lab.stop_daemon();
    let holder = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&a)
        .unwrap();
    holder.try_lock().unwrap();
    let out = lab.zpool(&["status", "tank"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        lab.anon(&out.stderr),
        "cannot open 'tank': pool is busy: '/tmp/zcDDDDDDDD/a' is in use by another process\n"
    );
    drop(holder);
    lab.ok(&["status", "tank"]);
}

/// `zetta install-links DIR` makes zpool/zfs symlinks and never replaces a real file.
#[test]
fn install_links_creates_symlinks_and_spares_files() {
    let lab = Lab::new();
    let bin = lab.dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("zfs"), "real zfs").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_zetta"))
        .args(["install-links", &bin.to_string_lossy()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(Path::new(&bin.join("zpool")).is_symlink());
    assert_eq!(
        std::fs::read_to_string(bin.join("zfs")).unwrap(),
        "real zfs"
    );
    let version = Command::new(bin.join("zpool"))
        .arg("version")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&version.stdout), "zetta 0.1.0\n");
}

/// Log devices: created with the pool, shown in their status section, removed with
/// `zpool remove`, and a removed log leaves no trace in `list -v` or after import. Cache
/// devices are refused at create and add, nothing written (issue 21: no L2ARC reads them
/// yet, so accepting one would promise what Zetta does not do).
#[test]
fn log_devices_create_show_remove_and_cache_devices_are_refused() {
    let lab = Lab::new();
    let (a, log, cache) = (
        lab.disk("a", DISK_SIZE_BYTES),
        lab.disk("log", DISK_SIZE_BYTES),
        lab.disk("cache", DISK_SIZE_BYTES),
    );
    let refused = "invalid vdev specification: cache devices are not supported by zetta yet\n";
    let out = lab.zpool(&["create", "tank", &a, "log", &log, "cache", &cache]);
    assert_eq!((out.code, out.stderr.as_str()), (1, refused));
    assert_eq!(lab.zpool(&["list", "tank"]).code, 1, "nothing was created");
    lab.ok(&["create", "tank", &a, "log", &log]);
    let out = lab.zpool(&["add", "tank", "cache", &cache]);
    assert_eq!((out.code, out.stderr.as_str()), (1, refused));
    let status = lab.ok(&["status", "tank"]);
    assert!(status.contains("\tlogs\t\n"), "{status}");
    assert!(!status.contains("\tcache\n"), "{status}");
    lab.ok(&["remove", "tank", &log]);
    let status = lab.ok(&["status", "tank"]);
    assert!(
        !status.contains("logs") && !status.contains("cache"),
        "{status}"
    );
    lab.ok(&["export", "tank"]);
    let dir = lab.dir.to_string_lossy().into_owned();
    lab.ok(&["import", "-d", &dir, "tank"]);
    let list = lab.ok(&["list", "-v", "tank"]);
    assert!(!list.contains("hole"), "{list}");
    let out = lab.zpool(&["remove", "tank", &a]);
    assert_eq!(out.code, 1, "{}", out.stderr);
}

/// Block devices are vdevs too: a pool on a loop device (when this machine lets us make
/// one — root and /dev/loop-control) shows as `disk`, exports and imports from /dev.
#[test]
fn pool_on_a_loop_block_device() {
    let lab = Lab::new();
    let image = lab.disk("loop.img", DISK_SIZE_BYTES);
    let attached = Command::new("losetup")
        .args(["-f", "--show", &image])
        .output();
    let device = match attached {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => {
            eprintln!("skipped: no loop device available here");
            return;
        }
    };
    let detach = || {
        let _ = Command::new("losetup").args(["-d", &device]).status();
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lab.ok(&["create", "blk", &device]);
        let status = lab.ok(&["status", "blk"]);
        // Named as OpenZFS names it: the search path's `/dev/` taken off.
        let short = device.trim_start_matches("/dev/");
        assert!(status.contains(&format!("\t  {short} ")), "{status}");
        lab.ok(&["export", "blk"]);
        lab.ok(&["import", "-d", "/dev", "blk"]);
        lab.ok(&["destroy", "blk"]);
    }));
    detach();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// The process model: the first command starts the daemon, which holds the pool (so a
/// second importer is refused), keeps counters since import, scrubs in the background,
/// and after a stop (or a kill) the next command brings the pool back from the cache.
#[test]
fn daemon_holds_pools_and_brings_them_back() {
    let lab = Lab::new();
    let (a, b) = (
        lab.disk("a", DISK_SIZE_BYTES),
        lab.disk("b", DISK_SIZE_BYTES),
    );
    lab.ok(&["create", "tank", "mirror", &a, &b]);
    let socket = lab.dir.join("run").join("zetta.sock");
    assert!(socket.exists(), "the daemon's socket");
    let holder = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&a)
        .unwrap();
    assert!(
        holder.try_lock().is_err(),
        "the daemon holds the pool's devices"
    );
    drop(holder);
    // A background scrub finishes and reports in status.
    lab.ok(&["scrub", "tank"]);
    let mut finished = false;
    for _ in 0..200 {
        if lab
            .ok(&["status", "tank"])
            .contains("scan: scrub repaired 0B")
        {
            finished = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(finished, "background scrub never finished");
    // Reads since import are counted on both mirror children (iostat -v).
    let iostat = lab.anon(&lab.ok(&["iostat", "-v", "-p", "tank"]));
    for row in iostat
        .lines()
        .filter(|l| l.trim_start().starts_with("/tmp/"))
    {
        let reads: u64 = row.split_whitespace().nth(3).unwrap().parse().unwrap();
        assert!(reads > 0, "{iostat}");
    }
    // ARC statistics of the held pools, in the kstat layout tools read.
    let arcstats = Command::new(env!("CARGO_BIN_EXE_zetta"))
        .arg("arcstats")
        .env("ZETTA_CACHE_FILE", lab.dir.join("zpool.cache"))
        .env("ZETTA_RUN_DIR", lab.dir.join("run"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&arcstats.stdout);
    let misses: u64 = text
        .lines()
        .find(|l| l.starts_with("misses "))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(misses > 0, "{text}");
    // Kill the daemon outright: the next command starts a new one and the pool is back.
    let pid: i32 = std::fs::read_to_string(lab.dir.join("run").join("zetta.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let status = lab.ok(&["status", "tank"]);
    assert!(status.contains("state: ONLINE"), "{status}");
    // Direct mode (no daemon) is refused while the daemon holds the pool.
    let direct = Command::new(lab.dir.join("zpool"))
        .args(["status", "tank"])
        .env("ZETTA_CACHE_FILE", lab.dir.join("zpool.cache"))
        .env("ZETTA_DIRECT", "1")
        .output()
        .unwrap();
    assert_eq!(direct.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&direct.stderr).contains("pool is busy"));
}

/// `zfs` over the dataset layer: create (with -p and -o), list, get with sources and
/// inheritance, set with OpenZFS's validation messages, inherit, and destroy with the
/// children refusal word for word (the clones post's and sanoid's commands).
#[test]
fn zfs_create_list_get_set_inherit_destroy() {
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    lab.ok(&["create", "tank", &a]);
    let zfs_ok = |args: &[&str]| {
        let out = lab.zfs(args);
        assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
        out.stdout
    };
    zfs_ok(&["create", "tank/a"]);
    zfs_ok(&["create", "-p", "tank/a/b/c"]);
    zfs_ok(&[
        "create",
        "-o",
        "compression=zstd",
        "-o",
        "syncoid:sync=false",
        "tank/d",
    ]);
    let again = lab.zfs(&["create", "tank/a"]);
    assert_eq!(
        (again.code, again.stderr.as_str()),
        (1, "cannot create 'tank/a': dataset already exists\n")
    );
    let orphan = lab.zfs(&["create", "tank/q/r"]);
    assert_eq!(
        (orphan.code, orphan.stderr.as_str()),
        (1, "cannot create 'tank/q/r': parent does not exist\n")
    );
    assert_eq!(
        zfs_ok(&["list", "-H", "-o", "name", "-r", "tank"]),
        "tank\ntank/a\ntank/a/b\ntank/a/b/c\ntank/d\n"
    );
    let list = zfs_ok(&["list"]);
    assert!(
        list.starts_with("NAME         USED  AVAIL  REFER  MOUNTPOINT\n"),
        "{list}"
    );
    assert_eq!(
        zfs_ok(&["get", "-H", "syncoid:sync", "tank/d"]),
        "tank/d\tsyncoid:sync\tfalse\tlocal\n"
    );
    assert_eq!(
        zfs_ok(&["get", "-H", "syncoid:sync", "tank/a"]),
        "tank/a\tsyncoid:sync\t-\t-\n"
    );
    zfs_ok(&["set", "compression=gzip", "tank/a"]);
    assert_eq!(
        zfs_ok(&["get", "-H", "-r", "-o", "name,value,source", "compression", "tank/a"]),
        "tank/a\tgzip\tlocal\ntank/a/b\tgzip\tinherited from tank/a\ntank/a/b/c\tgzip\tinherited from tank/a\n"
    );
    let bad = lab.zfs(&["set", "recordsize=3", "tank/a"]);
    assert_eq!(bad.code, 1);
    assert_eq!(
        bad.stderr,
        "cannot set property for 'tank/a': 'recordsize' must be power of 2 from 512B to 16M\n"
    );
    zfs_ok(&["inherit", "compression", "tank/a"]);
    assert_eq!(
        zfs_ok(&["get", "-H", "-o", "value,source", "compression", "tank/a/b"]),
        "on\tdefault\n"
    );
    let creation = zfs_ok(&["get", "-Hp", "-o", "value", "creation", "tank/a"]);
    assert!(
        creation.trim().parse::<u64>().unwrap() > 1_700_000_000,
        "{creation}"
    );
    let missing = lab.zfs(&["get", "-H", "name", "tank/nope"]);
    assert_eq!(
        (missing.code, missing.stderr.as_str()),
        (1, "cannot open 'tank/nope': dataset does not exist\n")
    );
    let parent = lab.zfs(&["destroy", "tank/a"]);
    assert_eq!(parent.code, 1);
    assert_eq!(
        parent.stderr,
        "cannot destroy 'tank/a': filesystem has children\nuse '-r' to destroy the following datasets:\ntank/a/b\ntank/a/b/c\n"
    );
    zfs_ok(&["destroy", "-r", "tank/a"]);
    assert_eq!(zfs_ok(&["list", "-H", "-o", "name"]), "tank\ntank/d\n");
    // Everything survives export and import.
    lab.ok(&["export", "tank"]);
    let dir = lab.dir.to_string_lossy().into_owned();
    lab.ok(&["import", "-d", &dir, "tank"]);
    assert_eq!(
        zfs_ok(&["get", "-H", "-o", "value", "compression", "tank/d"]),
        "zstd\n"
    );
}

/// Snapshots through `zfs`, in the exact command shapes sanoid and syncoid use:
/// `snapshot -r` with sanoid's names, `get -Hrpt snapshot creation` (no dataset = every
/// pool), `get -Hpd 1 -t snapshot guid,creation fs`, `list -t snapshot`, and the duplicate
/// refusal they look for ("already exists").
#[test]
fn zfs_snapshots_as_sanoid_and_syncoid_ask() {
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    lab.ok(&["create", "tank", &a]);
    let zfs_ok = |args: &[&str]| {
        let out = lab.zfs(args);
        assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
        out.stdout
    };
    zfs_ok(&["create", "-p", "tank/data/sub"]);
    let snap = "autosnap_2026-11-22_01:51:32_hourly";
    zfs_ok(&["snapshot", "-r", &format!("tank/data@{snap}")]);
    let again = lab.zfs(&["snapshot", &format!("tank/data@{snap}")]);
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    let creation = zfs_ok(&["get", "-Hrpt", "snapshot", "creation"]);
    let lines: Vec<&str> = creation.lines().collect();
    assert_eq!(lines.len(), 2, "{creation}");
    assert!(
        lines[0].starts_with(&format!("tank/data@{snap}\tcreation\t")),
        "{creation}"
    );
    assert!(
        lines[1].starts_with(&format!("tank/data/sub@{snap}\tcreation\t")),
        "{creation}"
    );
    assert!(lines.iter().all(|l| l.ends_with("\t-")));
    let guids = zfs_ok(&[
        "get",
        "-Hpd",
        "1",
        "-t",
        "snapshot",
        "guid,creation",
        "tank/data",
    ]);
    assert_eq!(
        guids.lines().count(),
        2,
        "only tank/data's own snapshot: {guids}"
    );
    assert!(guids
        .lines()
        .next()
        .unwrap()
        .starts_with(&format!("tank/data@{snap}\tguid\t")));
    assert_eq!(
        zfs_ok(&["list", "-H", "-o", "name", "-t", "snapshot", "tank/data"]),
        format!("tank/data@{snap}\n")
    );
    assert_eq!(
        zfs_ok(&[
            "get",
            "-H",
            "-o",
            "value",
            "type",
            &format!("tank/data@{snap}")
        ]),
        "snapshot\n"
    );
}

/// The clones post through `zfs`: clone a snapshot, the origin shows in `origin`, the
/// snapshot's destroy is refused with the dependent-clones message, `-R` takes the clone.
#[test]
fn zfs_clone_and_its_refusals() {
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    lab.ok(&["create", "tank", &a]);
    let zfs_ok = |args: &[&str]| {
        let out = lab.zfs(args);
        assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
        out.stdout
    };
    zfs_ok(&["create", "tank/source"]);
    zfs_ok(&["snapshot", "tank/source@snap"]);
    zfs_ok(&["clone", "tank/source@snap", "tank/copy"]);
    assert_eq!(
        zfs_ok(&["get", "-H", "-o", "value", "origin", "tank/copy"]),
        "tank/source@snap\n"
    );
    assert_eq!(
        zfs_ok(&["get", "-H", "-o", "value", "origin", "tank/source"]),
        "-\n"
    );
    let refused = lab.zfs(&["destroy", "tank/source@snap"]);
    assert_eq!(refused.code, 1);
    assert_eq!(
        refused.stderr,
        "cannot destroy 'tank/source@snap': snapshot has dependent clones\nuse '-R' to destroy the following datasets:\ntank/copy\n"
    );
    zfs_ok(&["destroy", "-R", "tank/source@snap"]);
    assert_eq!(
        zfs_ok(&["list", "-H", "-o", "name", "-t", "all"]),
        "tank\ntank/source\n"
    );
}

/// `zfs rename`: a filesystem moves with its children and snapshots (and `-p` makes
/// parents), snapshots rename alone or with `-r`, and the refusals are OpenZFS's.
#[test]
fn zfs_rename_filesystems_and_snapshots() {
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    lab.ok(&["create", "tank", &a]);
    let zfs_ok = |args: &[&str]| {
        let out = lab.zfs(args);
        assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
        out.stdout
    };
    zfs_ok(&["create", "-p", "tank/a/child"]);
    zfs_ok(&["snapshot", "-r", "tank/a@s1"]);
    zfs_ok(&["rename", "tank/a", "tank/b"]);
    zfs_ok(&["rename", "-r", "tank/b@s1", "s2"]);
    zfs_ok(&["rename", "-p", "tank/b", "tank/x/y/c"]);
    assert_eq!(
        zfs_ok(&["list", "-H", "-o", "name", "-r", "-t", "all", "tank"]),
        "tank\ntank/x\ntank/x/y\ntank/x/y/c\ntank/x/y/c@s2\ntank/x/y/c/child\ntank/x/y/c/child@s2\n"
    );
    let out = lab.zfs(&["rename", "tank/x", "tank/x/y/z"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        // zfs_rename's errbuf names the target until the name checks pass.
        (1, "cannot rename to 'tank/x/y/z': New dataset name cannot be a descendant of current dataset name\n")
    );
    let out = lab.zfs(&["rename", "tank/x/y/c@s2", "tank/x@s3"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "cannot rename to 'tank/x@s3': snapshots must be part of same dataset\n"
        )
    );
    let out = lab.zfs(&["rename", "tank/x/y", "tank/x/y/c"]);
    assert_eq!(out.code, 1);
    // The renamed tree survives export and import.
    lab.ok(&["export", "tank"]);
    lab.ok(&["import", "-d", &lab.dir.to_string_lossy(), "tank"]);
    assert_eq!(
        zfs_ok(&["list", "-H", "-o", "name", "-r", "tank/x/y/c"]),
        "tank/x/y/c\ntank/x/y/c/child\n"
    );
}

/// `zfs list -s/-S`: rows ordered by the keys (numbers as numbers), ties by name.
#[test]
fn zfs_list_sorts_by_keys() {
    let lab = Lab::new();
    let a = lab.disk("a", DISK_SIZE_BYTES);
    lab.ok(&["create", "tank", &a]);
    for (fs, quota) in [("tank/b", "30M"), ("tank/a", "20M"), ("tank/c", "20M")] {
        let out = lab.zfs(&["create", "-o", &format!("quota={quota}"), fs]);
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let list = |args: &[&str]| lab.zfs(args).stdout;
    assert_eq!(
        list(&["list", "-H", "-o", "name", "-S", "name"]),
        "tank/c\ntank/b\ntank/a\ntank\n"
    );
    // quota: tank has none (0) so it sorts first; the 20M pair by name; 30M last.
    assert_eq!(
        list(&["list", "-H", "-o", "name,quota", "-s", "quota"]),
        "tank\tnone\ntank/a\t20M\ntank/c\t20M\ntank/b\t30M\n"
    );
    assert_eq!(
        list(&["list", "-H", "-o", "name", "-S", "quota", "-s", "name"]),
        "tank/b\ntank/a\ntank/c\ntank\n"
    );
}
