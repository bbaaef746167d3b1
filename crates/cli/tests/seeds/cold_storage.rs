//! Post "ZFS snapshots and cold storage" (seeds 000, 002, 004): a dataset with ten
//! snapshots @0..@9, each holding its own data; a full stream of @0 and incrementals
//! (`-i`) kept in files; the two refusals (an incremental without its full, an incremental
//! that skips one) word for word; restores in order; `-i @2 @9` restoring only @9 and
//! `-I @0 @9` every snapshot between; and each `zfs list -rt all` of the post with its
//! USED and REFER.
//!
//! The post's snapshots hold 100M each; here 10 MiB (the accounting does not depend on
//! size), so the post's figures are compared at a tenth, within 5%.

use crate::common::Output;
use crate::lab::{write_random, SeedLab};

/// The post's 100M per snapshot, at a tenth.
const SNAPSHOT_DATA_BYTES: u64 = 10 << 20;
/// The post's sizes over ours.
const SCALE: f64 = 10.0;

/// `zfs list -Hp -rt all -o name,used,refer <fs>`: (name, USED, REFER) in the post's MiB
/// (ours times `SCALE`).
fn space_rows(lab: &SeedLab, fs: &str) -> Vec<(String, f64, f64)> {
    lab.settle("poolname");
    lab.zfs_ok(&["list", "-Hp", "-rt", "all", "-o", "name,used,refer", fs])
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let post_mib = |s: &str| s.parse::<f64>().unwrap() * SCALE / 1048576.0;
            (f[0].to_string(), post_mib(f[1]), post_mib(f[2]))
        })
        .collect()
}

/// Compares `zfs list -rt all <fs>` with the post's table: the same names in order, USED
/// and REFER within 5% (values the post shows as 0 or 19K: under 1M at its scale).
fn assert_table(lab: &SeedLab, fs: &str, post: &[(&str, f64, f64)]) {
    let rows = space_rows(lab, fs);
    let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let post_names: Vec<&str> = post.iter().map(|r| r.0).collect();
    assert_eq!(names, post_names);
    for ((name, used, refer), (_, post_used, post_refer)) in rows.iter().zip(post) {
        for (value, wanted) in [(used, post_used), (refer, post_refer)] {
            if *wanted < 1.0 {
                assert!(*value < 1.0, "{name}: {value:.2}M, post {wanted}");
            } else {
                assert!(
                    (value - wanted).abs() / wanted <= 0.05,
                    "{name}: {value:.1}M (at the post's scale) vs the post's {wanted}M\n{rows:?}"
                );
            }
        }
    }
}

/// `pv < file | zfs receive target` (the admin's shell, our `zfs` first in PATH).
fn receive(lab: &SeedLab, file: &str, target: &str) -> Output {
    lab.host.sh(&format!("zfs receive {target} < {file}"))
}

/// Why: the post step by step, with its files, refusals and tables: a full stream is the
/// base every incremental needs, incrementals restore only in order, `-i` skips the
/// snapshots in between and `-I` brings them all, and the restore carries the sender's
/// snapshots (same guids, creation times and data).
#[test]
fn cold_storage_post_through_the_cli() {
    let lab = SeedLab::new();
    let disk = lab.disk("disks/poolname.img", 1 << 30);
    let root = lab.path("poolname");
    lab.zpool_ok(&["create", "-m", &root, "poolname", &disk]);
    lab.zfs_ok(&["create", "-o", "compression=off", "poolname/setname"]);
    let setname = format!("{root}/setname");
    // "taken snapshots over a period of time, named @0 through @9", each with 100M of
    // data unique to it, none left in the dataset ("REFER 19K").
    for n in 0..10u64 {
        let file = format!("{setname}/{n}.bin");
        write_random(&file, SNAPSHOT_DATA_BYTES, n).unwrap();
        lab.zfs_ok(&["snapshot", &format!("poolname/setname@{n}")]);
        std::fs::remove_file(&file).unwrap();
    }
    // root@banshee:~# zfs list -rt all poolname/setname
    // poolname/setname 1004M 21.6G 19K; poolname/setname@0..@9 100M - 100M
    let mut table = vec![("poolname/setname".to_string(), 1004.0, 0.019)];
    table.extend((0..10).map(|n| (format!("poolname/setname@{n}"), 100.0, 100.0)));
    let post: Vec<(&str, f64, f64)> = table.iter().map(|r| (r.0.as_str(), r.1, r.2)).collect();
    assert_table(&lab, "poolname/setname", &post);

    let cold = lab.path("coldstorage");
    std::fs::create_dir_all(&cold).unwrap();
    // root@banshee:~# zfs send poolname/setname@0 | pv > /coldstorage/setname@0.zfsfull
    // root@banshee:~# zfs send -i poolname/setname@0 poolname/setname@1 | pv > …@0-@1.zfsinc
    // root@banshee:~# zfs send -i poolname/setname@1 poolname/setname@2 | pv > …@1-@2.zfsinc
    lab.sh_ok(&format!(
        "cd {cold} && zfs send poolname/setname@0 > setname@0.zfsfull \
         && zfs send -i poolname/setname@0 poolname/setname@1 > setname@0-@1.zfsinc \
         && zfs send -i poolname/setname@1 poolname/setname@2 > setname@1-@2.zfsinc"
    ));
    // "108M setname@0.zfsfull", "108M setname@0-@1.zfsinc": each stream carries its
    // snapshot's data, plus at most 10% (the post's is 8% over).
    for file in [
        "setname@0.zfsfull",
        "setname@0-@1.zfsinc",
        "setname@1-@2.zfsinc",
    ] {
        let size = std::fs::metadata(format!("{cold}/{file}")).unwrap().len();
        assert!(
            (SNAPSHOT_DATA_BYTES..=SNAPSHOT_DATA_BYTES * 11 / 10).contains(&size),
            "{file}: {size} bytes"
        );
    }
    // The files in cold storage are OpenZFS send streams (issue 15): OpenZFS's own `zstream
    // dump` reads each to its END with no checksum complaint, so a ZFS host can restore them.
    let zstream = crate::common::openzfs::oracle::oracle_prefix().join("sbin/zstream");
    assert!(
        zstream.is_file(),
        "{} is missing: run scripts/oracle.sh",
        zstream.display()
    );
    for file in [
        "setname@0.zfsfull",
        "setname@0-@1.zfsinc",
        "setname@1-@2.zfsinc",
    ] {
        let dump = lab.sh_ok(&format!("{} dump {cold}/{file} 2>&1", zstream.display()));
        assert!(
            dump.contains("SUMMARY:")
                && !dump.contains("checksum differs")
                && !dump.contains("Incorrect checksum")
                && !dump.contains("INVALID"),
            "{file}: {dump}"
        );
    }

    // "Without a full, incrementals are useless"
    // root@banshee:~# pv < /coldstorage/setname@0-@1.zfsinc | zfs receive poolname/restore
    // cannot receive incremental stream: destination 'poolname/restore' does not exist
    let out = receive(
        &lab,
        &format!("{cold}/setname@0-@1.zfsinc"),
        "poolname/restore",
    );
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "cannot receive incremental stream: destination 'poolname/restore' does not exist\n"
        )
    );
    // "Restoring a full backup from cold storage"
    // root@banshee:~# pv < /coldstorage/setname@0.zfsfull | zfs receive poolname/restore
    // poolname/restore 100M 21.5G 100M /poolname/restore; poolname/restore@0 0 - 100M -
    let out = receive(
        &lab,
        &format!("{cold}/setname@0.zfsfull"),
        "poolname/restore",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_table(
        &lab,
        "poolname/restore",
        &[
            ("poolname/restore", 100.0, 100.0),
            ("poolname/restore@0", 0.0, 100.0),
        ],
    );
    // The columns of the post's table: snapshots show '-' for AVAIL and MOUNTPOINT.
    let listing = lab.zfs_ok(&["list", "-rt", "all", "poolname/restore"]);
    let lines: Vec<Vec<&str>> = listing
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "USED", "AVAIL", "REFER", "MOUNTPOINT"]);
    assert_eq!(lines[1][4], format!("{root}/restore"));
    assert_eq!(
        (lines[2][0], lines[2][1], lines[2][2], lines[2][4]),
        ("poolname/restore@0", "0B", "-", "-")
    );

    // "Without ONE incremental, following incrementals are useless"
    // root@banshee:~# pv < /coldstorage/setname@1-@2.zfsinc | zfs receive poolname/restore
    // cannot receive incremental stream: most recent snapshot of poolname/restore does not
    // match incremental source
    let out = receive(
        &lab,
        &format!("{cold}/setname@1-@2.zfsinc"),
        "poolname/restore",
    );
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "cannot receive incremental stream: most recent snapshot of poolname/restore does not\nmatch incremental source\n")
    );
    // "Restoring incrementals in order"
    // poolname/restore 301M 100M; @0 100M 100M; @1 100M 100M; @2 0 100M
    for file in ["setname@0-@1.zfsinc", "setname@1-@2.zfsinc"] {
        let out = receive(&lab, &format!("{cold}/{file}"), "poolname/restore");
        assert_eq!(out.code, 0, "{file}: {}", out.stderr);
    }
    assert_table(
        &lab,
        "poolname/restore",
        &[
            ("poolname/restore", 301.0, 100.0),
            ("poolname/restore@0", 100.0, 100.0),
            ("poolname/restore@1", 100.0, 100.0),
            ("poolname/restore@2", 0.0, 100.0),
        ],
    );

    // "Incrementals that skip snapshots"
    // root@banshee:~# zfs send -i poolname/setname@2 poolname/setname@9 | pv > …@2-@9.zfsinc
    // root@banshee:~# pv < /coldstorage/setname@2-@9.zfsinc | zfs receive banshee/restore
    // poolname/restore 402M; @0 @1 @2 100M; @9 0 100M: "we did not restore the actual
    // snapshots between @2 and @9".
    lab.sh_ok(&format!(
        "zfs send -i poolname/setname@2 poolname/setname@9 > {cold}/setname@2-@9.zfsinc"
    ));
    let out = receive(
        &lab,
        &format!("{cold}/setname@2-@9.zfsinc"),
        "poolname/restore",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_table(
        &lab,
        "poolname/restore",
        &[
            ("poolname/restore", 402.0, 100.0),
            ("poolname/restore@0", 100.0, 100.0),
            ("poolname/restore@1", 100.0, 100.0),
            ("poolname/restore@2", 100.0, 100.0),
            ("poolname/restore@9", 0.0, 100.0),
        ],
    );

    // "Sending incremental streams to cold storage"
    // root@banshee:~# zfs send -I poolname/setname@0 poolname/setname@9 | pv > …@0-@9.zfsincstream
    // "969M setname@0-@9.zfsincstream": nine snapshots' data, about nine incrementals.
    lab.sh_ok(&format!(
        "zfs send -I poolname/setname@0 poolname/setname@9 > {cold}/setname@0-@9.zfsincstream"
    ));
    let stream_bytes = std::fs::metadata(format!("{cold}/setname@0-@9.zfsincstream"))
        .unwrap()
        .len();
    assert!(
        (9 * SNAPSHOT_DATA_BYTES..=9 * SNAPSHOT_DATA_BYTES * 11 / 10).contains(&stream_bytes),
        "-I stream of 9 snapshots: {stream_bytes} bytes"
    );
    // "Incremental streams can't be used without a full, either"
    // root@banshee:~# zfs destroy -R poolname/restore
    // root@banshee:~# pv < /coldstorage/setname@0-@9.zfsincstream | zfs receive
    // poolname/restore → cannot receive incremental stream: destination
    // 'poolname/restore' does not exist
    lab.zfs_ok(&["destroy", "-R", "poolname/restore"]);
    let stream = format!("{cold}/setname@0-@9.zfsincstream");
    let out = receive(&lab, &stream, "poolname/restore");
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "cannot receive incremental stream: destination 'poolname/restore' does not exist\n"
        )
    );
    // "Restoring from cold storage using snapshot streams"
    // poolname/restore 1004M 100M; @0..@8 100M 100M; @9 0 100M
    let out = receive(
        &lab,
        &format!("{cold}/setname@0.zfsfull"),
        "poolname/restore",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = receive(&lab, &stream, "poolname/restore");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut table = vec![("poolname/restore".to_string(), 1004.0, 100.0)];
    table.extend((0..9).map(|n| (format!("poolname/restore@{n}"), 100.0, 100.0)));
    table.push(("poolname/restore@9".to_string(), 0.0, 100.0));
    let post: Vec<(&str, f64, f64)> = table.iter().map(|r| (r.0.as_str(), r.1, r.2)).collect();
    assert_table(&lab, "poolname/restore", &post);
    // "contains all the actual snapshots from @0 through @9": the sender's, by guid and
    // creation time, each with its data (the restore's own head refers to @9's).
    let props = |fs: &str| {
        lab.zfs_ok(&[
            "get",
            "-Hpd",
            "1",
            "-t",
            "snapshot",
            "-o",
            "value",
            "guid,creation",
            fs,
        ])
    };
    assert_eq!(props("poolname/restore"), props("poolname/setname"));
    // REFER: @9's data exactly, metadata within a few blocks (the receiver lays out its
    // own dnode and directory blocks: 8K apart in our runs).
    let refer = |name: &str| lab.zfs_get("referenced", name).parse::<i64>().unwrap();
    let (restored, sent) = (refer("poolname/restore"), refer("poolname/setname@9"));
    assert!(
        (restored - sent).abs() <= 64 << 10,
        "restore REFER {restored} vs @9 {sent}"
    );
    let digest = |dir: &str| lab.sh_ok(&format!("cd '{dir}' && md5sum *.bin"));
    for n in [0, 4, 9] {
        assert_eq!(
            digest(&format!("{root}/restore/.zfs/snapshot/{n}")),
            digest(&format!("{setname}/.zfs/snapshot/{n}")),
            "@{n}"
        );
    }
}
