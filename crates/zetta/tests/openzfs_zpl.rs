//! OpenZFS's DSL and ZPL structures, checked against real OpenZFS bytes: the pools OpenZFS's
//! test suite ships are opened by OpenZFS 2.3's `zdb`, which prints every znode, SA
//! registry, SA layout, DSL dir and DSL dataset; the meta-dnode blocks holding those objects
//! are read raw (`zdb -R`), and every field `zetta::{dsl,zpl}::openzfs` decodes from the
//! bonus bytes must equal what zdb printed. Fixtures cover both byte orders: testpool_zstd
//! (pool v5000, ZPL 5 with system attributes; `x86_64` little-endian, `ppc64_fbsd`
//! big-endian) and zfs-pool-v1 (pool v1, ZPL 1 znodes, big-endian, 302 files).
//!
//! Why: Zetta could not read a single file of a real ZFS pool; after block pointers and
//! dnodes, the DSL dir/dataset bonus and the znode/SA bonus are what stand between the
//! uberblock and a file's attributes.

mod common;

use common::oracle::{ctime_utc, fixture, zdb, Fixture};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use zetta::byteorder::ByteOrder;
use zetta::dsl::openzfs::dataset::DslDatasetPhys;
use zetta::dsl::openzfs::dir::DslDirPhys;
use zetta::dsl::openzfs::prop::{self, PropDir, PropRule, PropSource, PropValue, PropsZap};
use zetta::dsl::openzfs::ZapValue;
use zetta::rand::SeededRng;
use zetta::zpl::openzfs::sa::{self, SaLayouts, SaRegistry, ZplAttrs};
use zetta::zpl::openzfs::znode::{self, DirEntry, ZTime, ZnodePhys};

// ---------------------------------------------------------------------------------------
// zdb plumbing

/// `zdb -AP -e -p DIR ARGS...` with times printed in UTC; its stdout.
fn zdb_text(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(zdb())
        .env("TZ", "UTC")
        .arg("-AP")
        .arg("-e")
        .arg("-p")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "zdb {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One object of a `zdb -dddddd` dump: its number, its header lines and body lines.
#[derive(Debug)]
struct ObjectDump {
    id: i64,
    header: String,
    lines: Vec<String>,
}

impl ObjectDump {
    /// `\tkey\tvalue` / `\tkey     value` lines (a znode's fields).
    fn znode_fields(&self) -> BTreeMap<String, String> {
        let mut map = BTreeMap::new();
        for line in &self.lines {
            let Some(rest) = line.strip_prefix('\t') else {
                continue;
            };
            if rest.starts_with('\t') {
                continue;
            }
            let mut parts = rest.splitn(2, ['\t', ' ']);
            let key = parts.next().unwrap_or("").to_string();
            let value = parts.next().unwrap_or("").trim().to_string();
            map.insert(key, value);
        }
        map
    }

    /// `\t\tkey = value` lines (ZAP entries, DSL fields).
    fn eq_fields(&self) -> Vec<(String, String)> {
        self.lines
            .iter()
            .filter_map(|l| l.strip_prefix("\t\t"))
            .filter_map(|l| l.split_once(" = "))
            .map(|(k, v)| (k.to_string(), v.trim().to_string()))
            .collect()
    }

    fn bonus_kind(&self) -> &str {
        self.header
            .lines()
            .find_map(|l| l.split_once(" bonus "))
            .map(|(_, k)| k.trim())
            .unwrap_or("")
    }
}

/// One dataset section of a dump.
#[derive(Debug)]
struct DatasetDump {
    name: String,
    order: ByteOrder,
    /// Its dnode blocks' bonuses are ciphertext: not readable without the key.
    encrypted: bool,
    objects: Vec<ObjectDump>,
}

impl DatasetDump {
    fn object(&self, id: i64) -> &ObjectDump {
        self.objects
            .iter()
            .find(|o| o.id == id)
            .unwrap_or_else(|| panic!("no object {id} in {}", self.name))
    }

    fn of_type(&self, type_name: &str) -> impl Iterator<Item = &ObjectDump> {
        let type_name = type_name.to_string();
        self.objects.iter().filter(move |o| {
            o.header
                .lines()
                .next()
                .is_some_and(|l| l.contains(&format!("  {type_name} (")))
        })
    }
}

fn parse_dump(text: &str) -> Vec<DatasetDump> {
    let mut sets: Vec<DatasetDump> = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("Dataset ") {
            let name = rest.split(' ').next().unwrap().to_string();
            let order = if line.contains(" BE ") {
                ByteOrder::Big
            } else {
                assert!(line.contains(" LE "), "no byte order in {line}");
                ByteOrder::Little
            };
            sets.push(DatasetDump {
                name,
                order,
                encrypted: !line.contains(" unencrypted "),
                objects: Vec::new(),
            });
        } else if line.trim_start().starts_with("Object  lvl") {
            let first = lines.next().unwrap();
            let id: i64 = first.split_whitespace().next().unwrap().parse().unwrap();
            let mut header = first.to_string();
            if let Some(next) = lines.peek() {
                if next.contains(" bonus ") {
                    header.push('\n');
                    header.push_str(lines.next().unwrap());
                }
            }
            let mut body = Vec::new();
            while let Some(next) = lines.peek() {
                if next.trim_start().starts_with("Object  lvl")
                    || next.starts_with("Dataset ")
                    || next.trim_start().starts_with("Dnode slots")
                {
                    break;
                }
                body.push(lines.next().unwrap().to_string());
            }
            let set = sets.last_mut().expect("an object before any dataset");
            set.objects.push(ObjectDump {
                id,
                header,
                lines: body,
            });
        }
    }
    sets
}

/// The logical bytes of an object set's meta-dnode (object 0), from the L0 blocks its dump
/// lists, read with `zdb -R` (holes stay zero).
fn meta_dnode(dir: &Path, pool: &str, set: &DatasetDump) -> Vec<u8> {
    let obj0 = set.object(0);
    let mut out = Vec::new();
    for line in &obj0.lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        // Holes print as "OFFSET L0 LSIZE B=txg": no DVA.
        if words.len() < 3 || words[1] != "L0" || !words[2].contains(':') {
            continue;
        }
        let offset = usize::from_str_radix(words[0], 16).unwrap();
        let dva = words[2];
        let sizes = words
            .iter()
            .find(|w| w.ends_with('P') && w.contains("L/"))
            .unwrap();
        let (lsize, psize) = sizes.trim_end_matches('P').split_once("L/").unwrap();
        let (lsize, psize) = (
            usize::from_str_radix(lsize, 16).unwrap(),
            usize::from_str_radix(psize, 16).unwrap(),
        );
        let mut parts = dva.split(':');
        let (vdev, off) = (parts.next().unwrap(), parts.next().unwrap());
        let spec = if lsize == psize {
            format!("{vdev}:{off}:{psize:x}:r")
        } else {
            format!("{vdev}:{off}:{lsize:x}/{psize:x}:dr")
        };
        let bytes = Command::new(zdb())
            .arg("-e")
            .arg("-p")
            .arg(dir)
            .arg("-R")
            .arg(pool)
            .arg(&spec)
            .output()
            .unwrap()
            .stdout;
        assert_eq!(bytes.len(), lsize, "zdb -R {pool} {spec}");
        if out.len() < offset + lsize {
            out.resize(offset + lsize, 0);
        }
        out[offset..offset + lsize].copy_from_slice(&bytes);
    }
    out
}

/// The bonus type and bonus bytes of dnode `obj` (dnode_phys_t: bonustype at 4, nblkptr
/// at 3, bonuslen at 10 in the block's order, bonus after the block pointers).
fn bonus(mdn: &[u8], obj: i64, order: ByteOrder) -> (u8, &[u8]) {
    let d = &mdn[obj as usize * 512..];
    let nblkptr = usize::from(d[3]);
    let len = usize::from(order.u16_at(d, 10).unwrap());
    let start = 64 + nblkptr * 128;
    (d[4], &d[start..start + len])
}

// ---------------------------------------------------------------------------------------
// Znodes and system attributes

/// A file's attributes in one shape, from either bonus form.
struct FileAttrs {
    times: [ZTime; 4],
    gen: u64,
    mode: u64,
    size: u64,
    parent: u64,
    links: u64,
    xattr: Option<u64>,
    rdev: Option<u64>,
    flags: u64,
    uid: u64,
    gid: u64,
    symlink: Option<Vec<u8>>,
    sa_xattrs: Option<Vec<(Vec<u8>, Vec<u8>)>>,
}

fn from_sa(z: &ZplAttrs) -> FileAttrs {
    FileAttrs {
        times: [
            z.atime.unwrap(),
            z.mtime.unwrap(),
            z.ctime.unwrap(),
            z.crtime.unwrap(),
        ],
        gen: z.gen.unwrap(),
        mode: z.mode.unwrap(),
        size: z.size.unwrap(),
        parent: z.parent.unwrap(),
        links: z.links.unwrap(),
        xattr: z.xattr,
        rdev: z.rdev,
        flags: z.flags.unwrap(),
        uid: z.uid.unwrap(),
        gid: z.gid.unwrap(),
        symlink: z.symlink.clone(),
        sa_xattrs: z.sa_xattrs.clone(),
    }
}

fn from_znode(z: &ZnodePhys) -> FileAttrs {
    FileAttrs {
        times: [z.atime, z.mtime, z.ctime, z.crtime],
        gen: z.gen,
        mode: z.mode,
        size: z.size,
        parent: z.parent,
        links: z.links,
        xattr: Some(z.xattr),
        rdev: Some(z.rdev),
        flags: z.flags,
        uid: z.uid,
        gid: z.gid,
        symlink: None,
        sa_xattrs: None,
    }
}

/// Every field zdb prints for a znode must be what we decoded; returns how many files.
fn check_against_zdb(obj: &ObjectDump, a: &FileAttrs) {
    let f = obj.znode_fields();
    let ctx = format!("object {} ({:?})", obj.id, f.get("path"));
    let expect = |key: &str, got: String| {
        assert_eq!(f.get(key), Some(&got), "{ctx}: {key}");
    };
    expect("uid", a.uid.to_string());
    expect("gid", a.gid.to_string());
    for (key, t) in ["atime", "mtime", "ctime", "crtime"].iter().zip(&a.times) {
        expect(key, ctime_utc(t.sec));
        assert!(t.nsec < 1_000_000_000, "{ctx}: {key} nsec {}", t.nsec);
    }
    expect("gen", a.gen.to_string());
    expect("mode", format!("{:o}", a.mode));
    expect("size", a.size.to_string());
    expect("parent", a.parent.to_string());
    expect("links", a.links.to_string());
    expect("pflags", format!("{:x}", a.flags));
    assert_eq!(
        f.get("xattr"),
        a.xattr.map(|x| x.to_string()).as_ref(),
        "{ctx}"
    );
    assert_eq!(
        f.get("rdev"),
        a.rdev.map(|r| format!("0x{r:016x}")).as_ref(),
        "{ctx}"
    );
    if let Some(target) = &a.symlink {
        expect("target", String::from_utf8_lossy(target).into_owned());
    }
    if let Some(xattrs) = &a.sa_xattrs {
        let printed: Vec<(String, String)> = obj
            .lines
            .iter()
            .skip_while(|l| !l.starts_with("\tSA xattrs:"))
            .skip(1)
            .filter_map(|l| l.strip_prefix("\t\t"))
            .filter_map(|l| l.split_once(" = "))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let ours: Vec<(String, String)> = xattrs
            .iter()
            .map(|(k, v)| {
                // zdb -P prints every value byte as \ooo.
                let v: String = v.iter().map(|b| format!("\\{b:03o}")).collect();
                (String::from_utf8_lossy(k).into_owned(), v)
            })
            .collect();
        assert_eq!(printed, ours, "{ctx}: SA xattrs");
    }
}

/// The registry and layouts of an SA filesystem, from zdb's dumps of its ZAPs.
fn sa_tables(set: &DatasetDump) -> (SaRegistry, SaLayouts) {
    let reg_obj = set.of_type("SA attr registration").next().unwrap();
    let reg: Vec<(String, ZapValue)> = reg_obj
        .eq_fields()
        .into_iter()
        .map(|(k, v)| {
            let hex = v.split(':').next().unwrap().trim();
            (
                k,
                ZapValue::Ints(vec![u64::from_str_radix(hex, 16).unwrap()]),
            )
        })
        .collect();
    let lay_obj = set.of_type("SA attr layouts").next().unwrap();
    let lay: Vec<(String, ZapValue)> = lay_obj
        .eq_fields()
        .into_iter()
        .map(|(k, v)| {
            let ids = v
                .trim_matches(|c| c == '[' || c == ']' || c == ' ')
                .split_whitespace()
                .map(|n| n.parse().unwrap())
                .collect();
            (k, ZapValue::Ints(ids))
        })
        .collect();
    let registry = SaRegistry::from_zap(reg.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
    let layouts = SaLayouts::from_zap(lay.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
    (registry, layouts)
}

/// Decodes every znode of a ZPL dataset dump and checks it; also the master node's keys and
/// every directory entry. Returns the number of files checked.
fn check_zpl_dataset(dir: &Path, pool: &str, set: &DatasetDump) -> usize {
    let mdn = meta_dnode(dir, pool, set);
    let master = set.object(znode::MASTER_NODE_OBJ as i64);
    let keys: BTreeMap<String, String> = master.eq_fields().into_iter().collect();
    for key in [
        znode::MASTER_VERSION,
        znode::MASTER_ROOT,
        znode::MASTER_DELETE_QUEUE,
    ] {
        assert!(
            keys.contains_key(key),
            "{}: master node lacks {key}",
            set.name
        );
    }
    let version: u64 = keys[znode::MASTER_VERSION].parse().unwrap();
    if version >= znode::ZPL_VERSION_SA {
        for key in [
            znode::MASTER_SA_ATTRS,
            znode::MASTER_NORMALIZATION,
            znode::MASTER_UTF8ONLY,
            znode::MASTER_CASESENSITIVITY,
        ] {
            assert!(
                keys.contains_key(key),
                "{}: master node lacks {key}",
                set.name
            );
        }
    }
    let tables = (version >= znode::ZPL_VERSION_SA).then(|| sa_tables(set));
    let mut files = 0;
    for obj in &set.objects {
        let kind = obj.bonus_kind();
        if kind != "ZFS znode" && kind != "System attributes" {
            continue;
        }
        let (btype, bytes) = bonus(&mdn, obj.id, set.order);
        let attrs = if kind == "ZFS znode" {
            assert_eq!(btype, znode::DMU_OT_ZNODE);
            let z = ZnodePhys::decode(bytes, set.order).unwrap();
            // The embedded ACL: version 0 (v0 ACEs) or 1 (FUID), its count within its space.
            assert!(z.acl.version <= 1, "object {}", obj.id);
            assert!(z.acl.extern_obj != 0 || z.acl.ace_count() <= 6);
            from_znode(&z)
        } else {
            assert_eq!(btype, znode::DMU_OT_SA);
            let (registry, layouts) = tables.as_ref().expect("SA tables");
            let buf = sa::decode_buffer(bytes, set.order, registry, layouts).unwrap();
            assert_eq!(buf.header.order, set.order, "object {}", obj.id);
            let z = ZplAttrs::from_buffers(&[buf], registry).unwrap();
            from_sa(&z)
        };
        check_against_zdb(obj, &attrs);
        // Directory entries: "name = obj (type: T)".
        if attrs.mode & znode::S_IFMT == znode::S_IFDIR {
            for (name, v) in obj.eq_fields() {
                let Some((num, ty)) = v.split_once(" (type: ") else {
                    continue;
                };
                let object: u64 = num.trim().parse().unwrap();
                let ty = ty.trim_end_matches(')');
                // zdb printed the decoded fields; rebuild the value and decode it back.
                let dtype = (0u8..16)
                    .find(|&t| DirEntry { object, dtype: t }.type_name() == ty)
                    .unwrap_or_else(|| panic!("{name}: type {ty}"));
                let e = DirEntry::decode(DirEntry { object, dtype }.encode());
                assert_eq!((e.object, e.dtype), (object, dtype));
                if dtype != 0 {
                    let target = set.object(object as i64);
                    let mode = u64::from_str_radix(&target.znode_fields()["mode"], 8).unwrap();
                    assert_eq!(DirEntry::dtype_of_mode(mode), dtype, "{name}");
                }
            }
        }
        files += 1;
    }
    files
}

// Why: a ZPL 5 filesystem keeps every file attribute as system attributes; the SA header's
// layout, variable lengths and 8-byte alignment, and the registry's packed lengths, must
// be read exactly as OpenZFS writes them, in both byte orders (ppc64_fbsd is big-endian).
#[test]
fn sa_znodes_of_a_zpl5_pool_match_zdb_in_both_byte_orders() {
    let fx = fixture("compression/testpool_zstd.tar.gz");
    let mut orders = Vec::new();
    for fs in ["testpool_zstd/x86_64", "testpool_zstd/ppc64_fbsd"] {
        let text = zdb_text(&fx.dir, &["-dddddd", fs]);
        let sets = parse_dump(&text);
        let set = sets.iter().find(|s| s.name == fs).unwrap();
        let files = check_zpl_dataset(&fx.dir, "testpool_zstd", set);
        assert!(files >= 3, "{fs}: {files} files");
        orders.push(set.order);
    }
    assert_eq!(orders, [ByteOrder::Little, ByteOrder::Big]);
    // OpenZFS 2.x filesystems, their snapshots and a received one (the encrypted ones
    // keep their bonuses encrypted: skipped).
    let fx = fixture("userquota/13709_reproducer.bz2");
    let text = zdb_text(&fx.dir, &["-dddddd", "testpool_13709"]);
    let sets = parse_dump(&text);
    let mut checked = 0;
    for set in sets.iter().filter(|s| s.name != "mos" && !s.encrypted) {
        assert!(
            check_zpl_dataset(&fx.dir, "testpool_13709", set) >= 1,
            "{}",
            set.name
        );
        checked += 1;
    }
    assert_eq!(checked, 3);
}

// Why: pools written before ZPL 5 (and every zfs-fuse pool) keep a 264-byte znode_phys_t in
// the bonus; v1 is also big-endian and its directory entries carry no type.
#[test]
fn legacy_znodes_of_a_v1_pool_match_zdb() {
    let fx = fixture("cli_root/zpool_upgrade/blockfiles/zfs-pool-v1.dat.bz2");
    let text = zdb_text(&fx.dir, &["-dddddd", "v1-pool"]);
    let sets = parse_dump(&text);
    let set = sets.iter().find(|s| s.name == "v1-pool").unwrap();
    assert_eq!(set.order, ByteOrder::Big);
    let files = check_zpl_dataset(&fx.dir, "v1-pool", set);
    assert_eq!(files, 302);
    // A pool written on SPARC (version 4, big-endian).
    let fx = fixture("history/sparc.migratedpool.DAT.Z");
    let text = zdb_text(&fx.dir, &["-dddddd", "history_pool"]);
    let sets = parse_dump(&text);
    let set = sets.iter().find(|s| s.name == "history_pool").unwrap();
    assert_eq!(set.order, ByteOrder::Big);
    assert_eq!(check_zpl_dataset(&fx.dir, "history_pool", set), 1);
}

// ---------------------------------------------------------------------------------------
// DSL dirs and datasets

fn check_dsl(fx: &Fixture, pool: &str) -> (usize, usize) {
    let text = zdb_text(&fx.dir, &["-dddddd", pool]);
    let sets = parse_dump(&text);
    let mos = sets.iter().find(|s| s.name == "mos").unwrap();
    let mdn = meta_dnode(&fx.dir, pool, mos);
    let (mut dirs, mut datasets) = (0, 0);
    for obj in &mos.objects {
        let kind = obj.bonus_kind();
        if kind != "DSL directory" && kind != "DSL dataset" {
            continue;
        }
        let (_, bytes) = bonus(&mdn, obj.id, mos.order);
        let printed: BTreeMap<String, String> = obj.eq_fields().into_iter().collect();
        let mut ours: Vec<(String, String)> = Vec::new();
        let mut put = |k: &str, v: &dyn ToString| ours.push((k.to_string(), v.to_string()));
        if kind == "DSL directory" {
            let d = DslDirPhys::decode(bytes, mos.order).unwrap();
            assert_eq!(&d.encode(mos.order)[..], &bytes[..256]);
            put("creation_time", &ctime_utc(d.creation_time));
            put("head_dataset_obj", &d.head_dataset_obj);
            put("parent_dir_obj", &d.parent_obj);
            put("origin_obj", &d.origin_obj);
            put("child_dir_zapobj", &d.child_dir_zapobj);
            put("used_bytes", &d.used_bytes);
            put("compressed_bytes", &d.compressed_bytes);
            put("uncompressed_bytes", &d.uncompressed_bytes);
            put("quota", &d.quota);
            put("reserved", &d.reserved);
            put("props_zapobj", &d.props_zapobj);
            put("deleg_zapobj", &d.deleg_zapobj);
            put("flags", &d.flags);
            if d.has_used_breakdown() {
                for (i, n) in ["HEAD", "SNAP", "CHILD", "CHILD_RSRV", "REFRSRV"]
                    .iter()
                    .enumerate()
                {
                    put(&format!("used_breakdown[{n}]"), &d.used_breakdown[i]);
                }
            }
            put("clones", &d.clones);
            dirs += 1;
        } else {
            let d = DslDatasetPhys::decode(bytes, mos.order).unwrap();
            assert_eq!(&d.encode(mos.order)[..], &bytes[..320]);
            put("dir_obj", &d.dir_obj);
            put("prev_snap_obj", &d.prev_snap_obj);
            put("prev_snap_txg", &d.prev_snap_txg);
            put("next_snap_obj", &d.next_snap_obj);
            put("snapnames_zapobj", &d.snapnames_zapobj);
            put("num_children", &d.num_children);
            put("userrefs_obj", &d.userrefs_obj);
            put("creation_time", &ctime_utc(d.creation_time));
            put("creation_txg", &d.creation_txg);
            put("deadlist_obj", &d.deadlist_obj);
            put("used_bytes", &d.referenced_bytes);
            put("compressed_bytes", &d.compressed_bytes);
            put("uncompressed_bytes", &d.uncompressed_bytes);
            put("unique", &d.unique_bytes);
            put("fsid_guid", &d.fsid_guid);
            put("guid", &d.guid);
            put("flags", &d.flags);
            put("next_clones_obj", &d.next_clones_obj);
            put("props_obj", &d.props_obj);
            // The raw block pointer: its first DVA as zdb prints it (vdev:offset:asize).
            let bp_line = &printed["bp"];
            let w0 = mos.order.u64_at(&d.bp, 0).unwrap();
            let w1 = mos.order.u64_at(&d.bp, 8).unwrap();
            if w0 == 0 && w1 == 0 {
                assert!(
                    bp_line.starts_with("HOLE") || bp_line.contains("EMBEDDED"),
                    "{bp_line}"
                );
            } else {
                let dva = format!(
                    "DVA[0]=<{}:{:x}:{:x}>",
                    w0 >> 32,
                    (w1 & !(1 << 63)) << 9,
                    (w0 & 0xff_ffff) << 9
                );
                assert!(bp_line.starts_with(&dva), "{dva} vs {bp_line}");
            }
            datasets += 1;
        }
        for (k, v) in ours {
            assert_eq!(printed.get(&k), Some(&v), "object {} {kind}: {k}", obj.id);
        }
    }
    (dirs, datasets)
}

// Why: the MOS's DSL dirs and datasets name every filesystem's object set and its space;
// every field must decode as zdb prints it, in either byte order.
#[test]
fn dsl_dirs_and_datasets_match_zdb_in_both_byte_orders() {
    let fx = fixture("compression/testpool_zstd.tar.gz");
    let (dirs, datasets) = check_dsl(&fx, "testpool_zstd");
    assert!(
        dirs >= 5 && datasets >= 5,
        "{dirs} dirs, {datasets} datasets"
    );
    let fx = fixture("cli_root/zpool_upgrade/blockfiles/zfs-pool-v1.dat.bz2");
    let (dirs, datasets) = check_dsl(&fx, "v1-pool");
    assert!(
        dirs >= 1 && datasets >= 1,
        "{dirs} dirs, {datasets} datasets"
    );
    let fx = fixture("history/sparc.migratedpool.DAT.Z");
    let (dirs, datasets) = check_dsl(&fx, "history_pool");
    assert!(
        dirs >= 1 && datasets >= 1,
        "{dirs} dirs, {datasets} datasets"
    );
    // OpenZFS 2.x: snapshots, a received filesystem, encrypted (extensified) dirs.
    let fx = fixture("userquota/13709_reproducer.bz2");
    let (dirs, datasets) = check_dsl(&fx, "testpool_13709");
    assert!(
        dirs >= 6 && datasets >= 8,
        "{dirs} dirs, {datasets} datasets"
    );
}

// Why: a child filesystem with no local value shows its parent's, and zfs get names the
// parent as the source; the real pool's props ZAPs (compression=16 on the root dir only)
// resolve that way through the dir chain the DSL dirs describe.
#[test]
fn properties_resolve_through_the_real_dir_chain() {
    let fx = fixture("compression/testpool_zstd.tar.gz");
    let text = zdb_text(&fx.dir, &["-dddddd", "testpool_zstd"]);
    let sets = parse_dump(&text);
    let mos = sets.iter().find(|s| s.name == "mos").unwrap();
    let mdn = meta_dnode(&fx.dir, "testpool_zstd", mos);
    let props_of = |obj: u64| props_zap(mos, obj);
    let dir = |obj: u64| {
        let (_, b) = bonus(&mdn, obj as i64, mos.order);
        DslDirPhys::decode(b, mos.order).unwrap()
    };
    let objdir: BTreeMap<String, String> = mos.object(1).eq_fields().into_iter().collect();
    let root_obj: u64 = objdir[zetta::dsl::openzfs::objdir::ROOT_DATASET]
        .parse()
        .unwrap();
    let root = dir(root_obj);
    let children: BTreeMap<String, String> = mos
        .object(root.child_dir_zapobj as i64)
        .eq_fields()
        .into_iter()
        .collect();
    let child_obj: u64 = children["x86_64"].parse().unwrap();
    let child = dir(child_obj);
    assert_eq!(child.parent_obj, root_obj);
    let (root_props, child_props) = (props_of(root.props_zapobj), props_of(child.props_zapobj));
    let chain = [
        PropDir {
            name: "testpool_zstd/x86_64",
            props: &child_props,
        },
        PropDir {
            name: "testpool_zstd",
            props: &root_props,
        },
    ];
    let inheritable = PropRule {
        inheritable: true,
        index_values: None,
    };
    let r = prop::resolve("compression", inheritable, &chain, None).unwrap();
    assert_eq!(r.value, Some(PropValue::Number(16)));
    assert_eq!(r.source.to_string(), "inherited from testpool_zstd");
    let r = prop::resolve("compression", inheritable, &chain[1..], None).unwrap();
    assert_eq!(r.source, PropSource::Local);
    let r = prop::resolve("atime", inheritable, &chain, None).unwrap();
    assert_eq!((r.value, r.source), (None, PropSource::Default));
}

/// A props ZAP as zdb prints it: numbers as numbers, anything else as a string.
fn props_zap(mos: &DatasetDump, obj: u64) -> PropsZap {
    mos.object(obj as i64)
        .eq_fields()
        .into_iter()
        .map(|(k, v)| {
            let value = match v.parse::<u64>() {
                Ok(n) => ZapValue::Ints(vec![n]),
                Err(_) => {
                    let mut b = v.into_bytes();
                    b.push(0);
                    ZapValue::Bytes(b)
                }
            };
            (k, value)
        })
        .collect()
}

fn zap(entries: &[(&str, ZapValue)]) -> PropsZap {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn s(v: &str) -> ZapValue {
    let mut b = v.as_bytes().to_vec();
    b.push(0);
    ZapValue::Bytes(b)
}

fn n(v: u64) -> ZapValue {
    ZapValue::Ints(vec![v])
}

// Why: `zfs get` SOURCE follows dsl_prop.c's order — $iuv, local, then $recvd unless a
// $inherit entry masks it, parent only for inheritable properties, a received value in an
// ancestor shows as "inherited from", a snapshot's own props first.
#[test]
fn property_sources_follow_dsl_prop_rules() {
    let root = zap(&[("compression", n(16)), ("mountpoint", s("/r"))]);
    let mid = zap(&[
        ("compression$recvd", n(2)),
        ("quota", n(100)),
        ("com.x:note", s("mid")),
        ("checksum$iuv", n(7)),
        (prop::HAS_RECEIVED, n(0)),
    ]);
    let leaf = zap(&[
        ("compression$inherit", n(0)),
        ("compression$recvd", n(3)),
        ("atime$recvd", n(0)),
    ]);
    let chain = [
        PropDir {
            name: "p/mid/leaf",
            props: &leaf,
        },
        PropDir {
            name: "p/mid",
            props: &mid,
        },
        PropDir {
            name: "p",
            props: &root,
        },
    ];
    let inh = PropRule {
        inheritable: true,
        index_values: None,
    };
    let get = |name: &str, rule: PropRule<'_>, chain: &[PropDir<'_>]| {
        let r = prop::resolve(name, rule, chain, None).unwrap();
        (r.value.map(|v| v.to_string()), r.source.to_string())
    };
    let some = |v: &str, src: &str| (Some(v.to_string()), src.to_string());
    // The leaf's $inherit masks its received value: the parent's received value shows.
    assert_eq!(
        get("compression", inh, &chain),
        some("2", "inherited from p/mid")
    );
    assert_eq!(get("compression", inh, &chain[1..]), some("2", "received"));
    assert_eq!(get("atime", inh, &chain), some("0", "received"));
    assert_eq!(
        get("mountpoint", inh, &chain),
        some("/r", "inherited from p")
    );
    assert_eq!(
        get("com.x:note", inh, &chain),
        some("mid", "inherited from p/mid")
    );
    let not_inh = PropRule {
        inheritable: false,
        index_values: None,
    };
    assert_eq!(get("quota", not_inh, &chain), (None, "default".to_string()));
    assert_eq!(get("quota", not_inh, &chain[1..]), some("100", "local"));
    // $iuv counts only for a valid index value of an index property.
    let idx = PropRule {
        inheritable: true,
        index_values: Some(&[7, 8]),
    };
    assert_eq!(
        get("checksum", idx, &chain),
        some("7", "inherited from p/mid")
    );
    assert_eq!(get("checksum", inh, &chain), (None, "default".to_string()));
    let bad_idx = PropRule {
        inheritable: true,
        index_values: Some(&[1]),
    };
    assert_eq!(get("checksum", bad_idx, &chain), (None, "default".into()));
    // A snapshot: its own props first, then every dir counts as inherited.
    let snap = zap(&[("com.x:snap", s("yes")), ("atime$recvd", n(1))]);
    let r = prop::resolve("com.x:snap", inh, &chain, Some(&snap)).unwrap();
    assert_eq!(
        (r.value, r.source),
        (Some(PropValue::String("yes".into())), PropSource::Local)
    );
    let r = prop::resolve("atime", inh, &chain, Some(&snap)).unwrap();
    assert_eq!(r.source, PropSource::Received);
    let r = prop::resolve("compression", inh, &chain, Some(&PropsZap::new())).unwrap();
    assert_eq!(r.source, PropSource::Inherited("p/mid".into()));
    let r = prop::resolve("quota", not_inh, &chain[1..], Some(&PropsZap::new())).unwrap();
    assert_eq!(r.source, PropSource::Default);
    // Entry kinds.
    assert_eq!(
        prop::entry_kind("compression$recvd"),
        prop::EntryKind::Received("compression")
    );
    assert_eq!(prop::entry_kind("$hasrecvd"), prop::EntryKind::HasReceived);
    // Malformed values are errors, not panics.
    let bad = zap(&[
        ("mountpoint", ZapValue::Bytes(b"/no-nul".to_vec())),
        ("quota", ZapValue::Ints(vec![1, 2])),
    ]);
    let chain = [PropDir {
        name: "x",
        props: &bad,
    }];
    assert!(prop::resolve("mountpoint", inh, &chain, None).is_err());
    assert!(prop::resolve("quota", inh, &chain, None).is_err());
}

// ---------------------------------------------------------------------------------------
// Hostile bytes

fn registry_and_layouts() -> (SaRegistry, SaLayouts) {
    let names = sa::ZPL_ATTR_NAMES;
    let lens: [u64; 23] = [
        16, 16, 16, 16, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 32, 88, 8, 0, 32, 0, 0, 8, 8,
    ];
    let entries: Vec<(String, ZapValue)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| (name.to_string(), n(i as u64 | lens[i] << 24 | 3 << 16)))
        .collect();
    let reg = SaRegistry::from_zap(entries.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
    let lay_entries = [
        (
            "2".to_string(),
            ZapValue::Ints(vec![5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 16, 19]),
        ),
        ("3".to_string(), ZapValue::Ints(vec![5, 6, 17, 20, 19, 99])),
        ("4".to_string(), ZapValue::Ints((0..23).collect())),
        ("5".to_string(), ZapValue::Ints(vec![5, 17])),
    ];
    let lay = SaLayouts::from_zap(lay_entries.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
    (reg, lay)
}

fn sa_header(order: ByteOrder, layout: u16, lengths: &[u16]) -> Vec<u8> {
    let hdr = (6 + 2 * lengths.len()).div_ceil(8) * 8;
    let mut b = vec![0u8; hdr];
    let (magic, info) = match order {
        ByteOrder::Little => (
            sa::SA_MAGIC.to_le_bytes(),
            (layout | ((hdr / 8) as u16) << 10).to_le_bytes(),
        ),
        ByteOrder::Big => (
            sa::SA_MAGIC.to_be_bytes(),
            (layout | ((hdr / 8) as u16) << 10).to_be_bytes(),
        ),
    };
    b[..4].copy_from_slice(&magic);
    b[4..6].copy_from_slice(&info);
    for (i, l) in lengths.iter().enumerate() {
        let l = match order {
            ByteOrder::Little => l.to_le_bytes(),
            ByteOrder::Big => l.to_be_bytes(),
        };
        b[6 + 2 * i..8 + 2 * i].copy_from_slice(&l);
    }
    b
}

// Why: bonus and spill bytes come from disk; SA lengths beyond the buffer, layouts not in
// the LAYOUTS ZAP, unknown attribute ids, and random or truncated bytes must be typed
// errors, never panics, in every decoder here.
#[test]
fn hostile_bytes_never_panic_and_are_typed_errors() {
    let (reg, lay) = registry_and_layouts();
    // A well-formed layout-4 buffer (every ZPL attribute) in both orders round-trips
    // through the decoder, with the SA xattr nvlist decoded.
    let mut xattrs = zetta::nvpair_xdr::XdrNvList::new();
    xattrs.add(
        "user.a",
        zetta::nvpair_xdr::XdrValue::ByteArray(b"hello".to_vec()),
    );
    let packed = zetta::nvpair_xdr::pack(&xattrs).unwrap();
    for order in [ByteOrder::Little, ByteOrder::Big] {
        let var = [5u16, 24, packed.len() as u16]; // SYMLINK, DACL_ACES, DXATTR
        let mut b = sa_header(order, 4, &var);
        let lens: [usize; 23] = [
            16,
            16,
            16,
            16,
            8,
            8,
            8,
            8,
            8,
            8,
            8,
            8,
            8,
            8,
            32,
            88,
            8,
            5,
            32,
            24,
            packed.len(),
            8,
            8,
        ];
        for (i, len) in lens.iter().enumerate() {
            let start = b.len();
            if i == 20 {
                b.extend_from_slice(&packed);
            } else {
                b.resize(start + len, 0);
                if *len == 8 || *len == 16 {
                    order.put_u64(&mut b, start, 1000 + i as u64).unwrap();
                }
                if i == 17 {
                    b[start..start + 5].copy_from_slice(b"/a/bc");
                }
            }
            b.resize(b.len().div_ceil(8) * 8, 0);
        }
        let buf = sa::decode_buffer(&b, order, &reg, &lay).unwrap();
        assert_eq!(buf.attrs.len(), 23);
        let z = ZplAttrs::from_buffers(&[buf], &reg).unwrap();
        assert_eq!(z.mode, Some(1005));
        assert_eq!(z.atime, Some(ZTime { sec: 1000, nsec: 0 }));
        assert_eq!(z.seq, Some(1022));
        assert_eq!(z.symlink.as_deref(), Some(&b"/a/bc"[..]));
        assert_eq!(
            z.sa_xattrs,
            Some(vec![(b"user.a".to_vec(), b"hello".to_vec())])
        );
        // Told the wrong order, the magic reveals the right one.
        let other = if order == ByteOrder::Little {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        };
        assert_eq!(
            sa::decode_buffer(&b, other, &reg, &lay)
                .unwrap()
                .header
                .order,
            order
        );
        // Every truncation is an error, never a panic.
        for cut in 0..b.len() {
            assert!(
                sa::decode_buffer(&b[..cut], order, &reg, &lay).is_err(),
                "cut {cut}"
            );
        }
    }
    let le = ByteOrder::Little;
    // A variable length beyond the buffer.
    let mut b = sa_header(le, 5, &[4000]);
    b.resize(64, 0);
    assert_eq!(
        sa::decode_buffer(&b, le, &reg, &lay),
        Err(sa::SaError::Overrun {
            attr: 17,
            offset: 16,
            length: 4000,
            len: 64
        })
    );
    // Layout 3 names attribute 99, unregistered.
    let mut b = sa_header(le, 3, &[1, 1, 1]);
    b.resize(256, 0);
    assert_eq!(
        sa::decode_buffer(&b, le, &reg, &lay),
        Err(sa::SaError::UnknownAttribute {
            layout: 3,
            attr: 99
        })
    );
    // A layout not in the LAYOUTS ZAP; layout 0 is the empty layout 1.
    let b = sa_header(le, 77, &[]);
    assert_eq!(
        sa::decode_buffer(&b, le, &reg, &lay),
        Err(sa::SaError::UnknownLayout { layout: 77 })
    );
    assert!(sa::decode_buffer(&sa_header(le, 0, &[]), le, &reg, &lay)
        .unwrap()
        .attrs
        .is_empty());
    // A header size that does not match the layout.
    let mut b = sa_header(le, 2, &[24, 0, 0]);
    b.resize(512, 0);
    assert!(matches!(
        sa::decode_buffer(&b, le, &reg, &lay),
        Err(sa::SaError::HeaderSize { .. })
    ));
    // Bad magic; bad xattr nvlists; wrong-length attributes.
    assert!(matches!(
        sa::decode_buffer(&[1u8; 64], le, &reg, &lay),
        Err(sa::SaError::BadMagic { .. })
    ));
    assert!(sa::decode_sa_xattrs(&[1, 1, 0, 0, 0]).is_err());
    let mut wrong = zetta::nvpair_xdr::XdrNvList::new();
    wrong.add("user.n", zetta::nvpair_xdr::XdrValue::Uint64(1));
    assert!(sa::decode_sa_xattrs(&zetta::nvpair_xdr::pack(&wrong).unwrap()).is_err());
    // Malformed ZAP entries.
    assert!(SaRegistry::from_zap([("ZPL_X", &ZapValue::Bytes(vec![1]))]).is_err());
    assert!(SaLayouts::from_zap([("two", &n(1))]).is_err());
    assert!(SaLayouts::from_zap([("2", &ZapValue::Ints(vec![70000]))]).is_err());

    // Random bytes and random mutations of a valid buffer into every decoder.
    let mut rng = SeededRng::new(0x5a_2f50);
    let valid = {
        let mut b = sa_header(le, 2, &[24]);
        b.resize(168, 0);
        b
    };
    for round in 0..20_000 {
        let len = rng.below(600) as usize;
        let mut buf = vec![0u8; len];
        rng.fill(&mut buf);
        if round % 2 == 0 && len >= 8 {
            // Keep a valid magic so the header and layout paths are reached.
            buf[..4].copy_from_slice(&sa::SA_MAGIC.to_le_bytes());
        }
        if round % 3 == 0 {
            buf = valid.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(buf.len() as u64) as usize;
                buf[i] = rng.next_u64() as u8;
            }
            buf.truncate(rng.below(buf.len() as u64 + 1) as usize);
        }
        for order in [ByteOrder::Little, ByteOrder::Big] {
            if let Ok(b) = sa::decode_buffer(&buf, order, &reg, &lay) {
                let _ = ZplAttrs::from_buffers(&[b], &reg);
            }
            let _ = ZnodePhys::decode(&buf, order).map(|z| z.inline_symlink(&buf).map(|s| s.len()));
            let _ = DslDirPhys::decode(&buf, order);
            let _ = DslDatasetPhys::decode(&buf, order);
        }
        let _ = sa::decode_sa_xattrs(&buf);
        let _ = DirEntry::decode(rng.next_u64()).type_name();
    }
    // Short bonuses are errors that say so.
    for len in [0, 8, 255] {
        assert!(DslDirPhys::decode(&vec![0; len], le).is_err());
    }
    assert!(DslDatasetPhys::decode(&[0; 319], le).is_err());
    assert!(ZnodePhys::decode(&[0; 263], le).is_err());
    // A symlink whose size runs past the bonus: not inline, no panic.
    let mut zb = vec![0u8; 300];
    ByteOrder::Big
        .put_u64(&mut zb, 72, znode::S_IFLNK | 0o777)
        .unwrap();
    ByteOrder::Big.put_u64(&mut zb, 80, u64::MAX).unwrap();
    let z = ZnodePhys::decode(&zb, ByteOrder::Big).unwrap();
    assert_eq!(z.inline_symlink(&zb), None);
    ByteOrder::Big.put_u64(&mut zb, 80, 36).unwrap();
    let z = ZnodePhys::decode(&zb, ByteOrder::Big).unwrap();
    assert_eq!(z.inline_symlink(&zb).map(|s| s.len()), Some(36));
}

// ---------------------------------------------------------------------------------------
// A zfs-fuse pool: ZPL 4 znodes of every file kind, xattr dirs, symlinks in and out of the
// bonus, received and masked properties.
//
// tests/fixtures/zfs-fuse-zpl4.dat.bz2 is a 64 MiB pool (SPA version 23, ZPL 4) made by
// zfs-fuse 0.7 (`zfs-fuse -x`, xattrs on):
//   zpool create -m MNT fusepool FILE; cd MNT
//   echo hello > file; mkdir -p dir/sub; echo x > dir/sub/deep; ln -s file short
//   ln -s t{56} sym56; ln -s t{57} sym57; ln -s /long/{x40}end longlink (204 bytes)
//   mkfifo fifo; mknod cdev c 4 66; mknod bdev b 8 3; a unix socket `sock`; ln file hard
//   chown 1234:5678 file; chmod 4751 dir; chmod 1777 dir/sub; truncate -s 5G sparse
//   xattrs user.color=blue on file, user.big=v{300} and user.two=2 on dir
//   zfs create -o compression=gzip fusepool/a; zfs create fusepool/a/b
//   zfs set com.x:note=hello fusepool/a; zfs set quota=50M fusepool/a/b
//   zfs snapshot fusepool/a@s1; zfs set com.x:snapnote=yes fusepool/a@s1
//   zfs send -R fusepool/a@s1 | zfs recv fusepool/r; zfs inherit compression fusepool/r
//   zfs set com.x:note=mine fusepool/r; zfs create fusepool/r/c; zpool export fusepool
// `zfs get` printed the SOURCE column that `FUSE_ZFS_GET` holds.

fn fuse_fixture() -> Fixture {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zfs-fuse-zpl4.dat.bz2");
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("zetta-zfsfuse-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("fuse.dat");
    let out = std::fs::File::create(&file).unwrap();
    let status = Command::new("bunzip2")
        .arg("-dc")
        .arg(&src)
        .stdout(out)
        .status()
        .unwrap();
    assert!(status.success(), "bunzip2 {}", src.display());
    Fixture { dir, file }
}

// Why: zfs-fuse (and every pool before ZPL 5) stores znode_phys_t; device numbers, xattr
// directories, hard links, setuid/sticky modes, and symlink targets kept in the bonus
// (up to 56 bytes) or in a data block must all come out as OpenZFS reads them.
#[test]
fn zpl4_znodes_of_every_file_kind_match_zdb() {
    let fx = fuse_fixture();
    let text = zdb_text(&fx.dir, &["-dddddd", "fusepool"]);
    let sets = parse_dump(&text);
    let mut total = 0;
    for set in sets.iter().filter(|s| s.name != "mos") {
        total += check_zpl_dataset(&fx.dir, "fusepool", set);
    }
    assert!(total >= 30, "{total} znodes");
    let root = sets.iter().find(|s| s.name == "fusepool").unwrap();
    let mdn = meta_dnode(&fx.dir, "fusepool", root);
    let by_path = |path: &str| {
        let obj = root
            .objects
            .iter()
            .find(|o| o.znode_fields().get("path").map(String::as_str) == Some(path))
            .unwrap_or_else(|| panic!("no {path}"));
        let (_, b) = bonus(&mdn, obj.id, root.order);
        (ZnodePhys::decode(b, root.order).unwrap(), b.to_vec())
    };
    let t56 = "t".repeat(56);
    for (path, inline) in [
        ("/short", Some("file")),
        ("/sym56", Some(t56.as_str())),
        ("/sym57", None),
        ("/longlink", None),
        ("/hard", None),
    ] {
        let (z, b) = by_path(path);
        assert_eq!(
            z.inline_symlink(&b)
                .map(|t| String::from_utf8_lossy(t).into_owned()),
            inline.map(str::to_string),
            "{path}"
        );
    }
    assert_eq!(by_path("/longlink").0.size, 204);
    // The kinds: mode bits and the directory entries' types agree (checked above), and the
    // device numbers are the ones mknod was given, as zfs-fuse stores a Linux dev_t
    // (major << 8 | minor for small numbers).
    let (cdev, _) = by_path("/cdev");
    let (bdev, _) = by_path("/bdev");
    assert_eq!(cdev.mode & znode::S_IFMT, znode::S_IFCHR);
    assert_eq!(bdev.mode & znode::S_IFMT, znode::S_IFBLK);
    assert_eq!((cdev.rdev >> 8, cdev.rdev & 0xff), (4, 66));
    assert_eq!((bdev.rdev >> 8, bdev.rdev & 0xff), (8, 3));
    // `file` and `hard` are one znode; zdb names it by the entry it finds first.
    let (file, _) = by_path("/hard");
    assert_ne!(file.xattr, 0, "user.color lives in an xattr dir");
    assert_eq!((file.uid, file.gid, file.links), (1234, 5678, 2));
    assert_eq!(by_path("/sparse").0.size, 5 << 30);
    // The xattr dir holds the xattr files by name.
    let xdir = root.object(file.xattr as i64);
    let names: Vec<String> = xdir.eq_fields().into_iter().map(|(k, _)| k).collect();
    assert_eq!(names, ["user.color"]);
    // The master node of a ZPL 4 filesystem.
    let master: BTreeMap<String, String> = root.object(1).eq_fields().into_iter().collect();
    assert_eq!(master[znode::MASTER_VERSION], "4");
    // zfs-fuse records no normalization/utf8only/casesensitivity (OpenZFS 2.x does:
    // testpool_zstd's master nodes are checked for them).
    for key in [znode::MASTER_ROOT, znode::MASTER_DELETE_QUEUE] {
        assert!(master.contains_key(key), "{key}");
    }
}

/// What `zfs get -H -o name,property,value,source` printed before the export.
const FUSE_ZFS_GET: &str = "\
fusepool	compression	off	default
fusepool	com.x:note	-	-
fusepool	quota	none	default
fusepool	atime	on	default
fusepool/a	compression	gzip	local
fusepool/a	com.x:note	hello	local
fusepool/a	quota	none	default
fusepool/a	atime	on	default
fusepool/a@s1	com.x:note	hello	inherited from fusepool/a
fusepool/a@s1	com.x:snapnote	yes	local
fusepool/a/b	compression	gzip	inherited from fusepool/a
fusepool/a/b	com.x:note	hello	inherited from fusepool/a
fusepool/a/b	quota	50M	local
fusepool/a/b	atime	on	default
fusepool/r	compression	off	default
fusepool/r	com.x:note	mine	local
fusepool/r	quota	none	default
fusepool/r	atime	on	default
fusepool/r@s1	com.x:note	mine	inherited from fusepool/r
fusepool/r@s1	com.x:snapnote	yes	received
fusepool/r/c	compression	off	default
fusepool/r/c	com.x:note	mine	inherited from fusepool/r
fusepool/r/c	quota	none	default
fusepool/r/c	atime	on	default
";

// Why: `zfs get` must name the same value and SOURCE as ZFS for real props ZAPs, including
// a received value masked by `zfs inherit` ($inherit), a local value over a received one,
// $hasrecvd, a snapshot's own local and received properties, and non-inheritable quota.
#[test]
fn property_sources_of_a_real_pool_match_zfs_get() {
    let fx = fuse_fixture();
    let (dirs, datasets) = check_dsl(&fx, "fusepool");
    assert!(
        dirs >= 5 && datasets >= 7,
        "{dirs} dirs, {datasets} datasets"
    );
    let text = zdb_text(&fx.dir, &["-dddddd", "fusepool"]);
    let sets = parse_dump(&text);
    let mos = sets.iter().find(|s| s.name == "mos").unwrap();
    let mdn = meta_dnode(&fx.dir, "fusepool", mos);
    let dir_of = |obj: u64| {
        let (_, b) = bonus(&mdn, obj as i64, mos.order);
        DslDirPhys::decode(b, mos.order).unwrap()
    };
    let ds_of = |obj: u64| {
        let (_, b) = bonus(&mdn, obj as i64, mos.order);
        DslDatasetPhys::decode(b, mos.order).unwrap()
    };
    let zap_u64s = |obj: u64| -> Vec<(String, u64)> {
        mos.object(obj as i64)
            .eq_fields()
            .into_iter()
            .filter(|(k, _)| !k.starts_with('$'))
            .map(|(k, v)| (k, v.parse().unwrap()))
            .collect()
    };
    // Walk the dir tree: full name → (dir, props), and each snapshot's props.
    let objdir: BTreeMap<String, String> = mos.object(1).eq_fields().into_iter().collect();
    let root_obj: u64 = objdir[zetta::dsl::openzfs::objdir::ROOT_DATASET]
        .parse()
        .unwrap();
    let mut dirs: BTreeMap<String, (u64, PropsZap)> = BTreeMap::new();
    let mut snaps: BTreeMap<String, PropsZap> = BTreeMap::new();
    let mut todo = vec![("fusepool".to_string(), root_obj)];
    while let Some((name, obj)) = todo.pop() {
        let d = dir_of(obj);
        for (child, cobj) in zap_u64s(d.child_dir_zapobj) {
            todo.push((format!("{name}/{child}"), cobj));
        }
        let head = ds_of(d.head_dataset_obj);
        assert!(!head.is_snapshot());
        for (snap, sobj) in zap_u64s(head.snapnames_zapobj) {
            let s = ds_of(sobj);
            assert!(s.is_snapshot());
            let props = if s.props_obj == 0 {
                PropsZap::new()
            } else {
                props_zap(mos, s.props_obj)
            };
            snaps.insert(format!("{name}@{snap}"), props);
        }
        dirs.insert(name, (d.parent_obj, props_zap(mos, d.props_zapobj)));
    }
    let has_received = &dirs["fusepool/r"].1;
    assert_eq!(
        prop::entry_kind("$hasrecvd"),
        prop::EntryKind::HasReceived,
        "{:?}",
        has_received.keys()
    );
    assert!(has_received.contains_key(prop::HAS_RECEIVED));
    let rule = |p: &str| PropRule {
        inheritable: p != "quota",
        index_values: None,
    };
    let shown = |p: &str, v: Option<PropValue>| -> String {
        match (p, v) {
            ("compression", None) => "off".into(),
            ("compression", Some(PropValue::Number(2))) => "off".into(),
            ("compression", Some(PropValue::Number(10))) => "gzip".into(),
            ("quota", None) | ("quota", Some(PropValue::Number(0))) => "none".into(),
            ("quota", Some(PropValue::Number(n))) => format!("{}M", n >> 20),
            ("atime", None) => "on".into(),
            (_, None) => "-".into(),
            (_, Some(v)) => v.to_string(),
        }
    };
    let mut checked = 0;
    for line in FUSE_ZFS_GET.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let (name, property, value, source) = (f[0], f[1], f[2], f[3]);
        let (fs, snap) = match name.split_once('@') {
            Some((fs, _)) => (fs, Some(&snaps[name])),
            None => (name, None),
        };
        // The chain from the dataset's dir up to the root.
        let mut chain_names = vec![fs.to_string()];
        while let Some((parent, _)) = chain_names.last().unwrap().rsplit_once('/') {
            chain_names.push(parent.to_string());
        }
        let chain: Vec<PropDir<'_>> = chain_names
            .iter()
            .map(|n| PropDir {
                name: n,
                props: &dirs[n].1,
            })
            .collect();
        let r = prop::resolve(property, rule(property), &chain, snap).unwrap();
        let src = match (&r.source, property.contains(':')) {
            // zfs get prints "-" for a user property that is not set anywhere.
            (PropSource::Default, true) => "-".to_string(),
            (PropSource::Local, _) if snap.is_some() => "local".to_string(),
            (s, _) => s.to_string(),
        };
        assert_eq!(
            (shown(property, r.value), src),
            (value.to_string(), source.to_string()),
            "{line}"
        );
        checked += 1;
    }
    assert_eq!(checked, 24);
}

// Why: a ZPL 4 dataset Zetta writes (`-o version=23`, or a zfs-fuse pool imported
// read-write) must hold znodes zfs-fuse and OpenZFS read as their own. Every znode of the
// zfs-fuse fixture decodes with the engine's `znode_phys_t` codec and re-encodes byte for
// byte over the 176 bytes before the ACL and the symlink target after it; the ACL Zetta
// writes is OpenZFS 2.3's trivial ACL of the mode (version 1, `count` ACEs of 8 bytes,
// `size` their bytes), where zfs-fuse wrote the older six-entry form.
#[test]
fn zpl4_znodes_of_zfs_fuse_reencode_byte_for_byte() {
    use zetta::zpl::znode::{ZnodePhys as EngineZnode, ZNODE_V4_BYTES};
    let fx = fuse_fixture();
    let text = zdb_text(&fx.dir, &["-dddddd", "fusepool"]);
    let sets = parse_dump(&text);
    let root = sets.iter().find(|s| s.name == "fusepool").unwrap();
    let mdn = meta_dnode(&fx.dir, "fusepool", root);
    let mut checked = 0;
    for obj in root.objects.iter().filter(|o| o.id > 0) {
        let (bonus_type, b) = bonus(&mdn, obj.id, root.order);
        if bonus_type != znode::DMU_OT_ZNODE {
            continue;
        }
        let (z, inline) = EngineZnode::decode_v4(b).unwrap();
        let target = inline.map(|r| &b[r]);
        let out = z.encode_v4(root.order, target).unwrap();
        let out = out.as_bytes();
        assert_eq!(out.len(), b.len(), "object {}", obj.id);
        assert_eq!(&out[..176], &b[..176], "object {}: znode fields", obj.id);
        assert_eq!(
            &out[ZNODE_V4_BYTES..],
            &b[ZNODE_V4_BYTES..],
            "object {}",
            obj.id
        );
        // Zetta's ACL: the trivial ACL of the mode, as the OpenZFS reader decodes it.
        let ours = ZnodePhys::decode(out, root.order).unwrap();
        let theirs = ZnodePhys::decode(b, root.order).unwrap();
        assert_eq!((ours.acl.extern_obj, ours.acl.version), (0, 1));
        assert_eq!(theirs.acl.version, 1, "zfs-fuse writes FUID ACLs at ZPL 4");
        let (_, n) = zetta::zpl::znode::trivial_acl(z.mode, z.mode & 0o170000 == 0o040000);
        assert_eq!(ours.acl.ace_count(), n as u64);
        assert_eq!(ours.acl.size_or_count as usize, 8 * n);
        checked += 1;
    }
    assert!(checked >= 30, "{checked} znodes");
    // The ACEs are the ones of the SA form (whose bytes `golden_openzfs_sa_bonus_reencodes_
    // byte_for_byte` pins against OpenZFS 2.3): for /dir/sub/deep (a 0644 file) the three
    // owner@, group@, everyone@ allows, last in the SA bonus and first in ace_data.
    let deep = root
        .objects
        .iter()
        .find(|o| o.znode_fields().get("path").map(String::as_str) == Some("/dir/sub/deep"))
        .unwrap();
    let (_, b) = bonus(&mdn, deep.id, root.order);
    let (z, _) = EngineZnode::decode_v4(b).unwrap();
    assert_eq!((z.mode, z.size, z.gen, z.links), (0o100644, 2, 7, 1));
    let v4 = z.encode_v4(root.order, None).unwrap();
    // (without its xattr dir, whose ZPL_XATTR would follow the ACEs in the SA form)
    let sa = EngineZnode { xattr: 0, ..z }
        .encode_sa(root.order, None)
        .unwrap();
    let sa = sa.as_bytes();
    let acl = ZnodePhys::decode(v4.as_bytes(), root.order).unwrap().acl;
    assert_eq!(acl.ace_count(), 3);
    assert_eq!(&acl.ace_data[..24], &sa[sa.len() - 24..]);
    assert!(acl.ace_data[24..].iter().all(|&x| x == 0));
}
