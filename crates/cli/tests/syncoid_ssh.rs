//! syncoid to a second host over ssh, the way the seed posts replicate to a backup server:
//! `syncoid src/data root@host:backup/data`. The "host" is a network namespace on this
//! machine, joined by a veth pair, running its own sshd (`ip netns exec … sshd -D`) with a
//! key made for the test. Its sessions find Zetta's `zfs` first in PATH and talk to a
//! daemon of their own (`SetEnv` in the sshd config: PATH, ZETTA_CACHE_FILE,
//! ZETTA_RUN_DIR), which holds the target pool: each side has its own pools and daemon, as
//! two machines would. syncoid's control-master ssh, its remote `zfs receive`, `zfs get`,
//! `zfs rollback`, `zpool get feature@extensible_dataset` and `ps -Ao args=` all cross
//! the link; the stream goes through lzop and mbuffer as syncoid chooses. `ip netns exec`
//! also gives the host its own mount namespace, so its mounts are looked at through ssh.

mod common;

use common::host::{installed, tree_digest, Host};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SYNCOID: &str = "/usr/sbin/syncoid";
const SSHD: &str = "/usr/sbin/sshd";

/// The second host: namespace, link, sshd, and the directory its `zfs` lives in.
struct Remote {
    netns: String,
    address: String,
    dir: String,
    key: String,
    sshd: Option<Child>,
}

fn run(program: &str, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(status.success(), "{program} {args:?}: {status}");
}

impl Remote {
    fn start(host: &Host) -> Remote {
        let unique = std::process::id() % 200 + 20;
        let netns = format!("zr{unique}");
        let outside = format!("zr{unique}a");
        let inside = format!("zr{unique}b");
        let address = format!("10.254.{unique}.2");
        let dir = host.lab.path("remote");
        // Leftovers of an earlier run that was killed.
        for args in [["netns", "del", &netns], ["link", "del", &outside]] {
            let _ = Command::new("ip").args(args).stderr(Stdio::null()).status();
        }
        run("ip", &["netns", "add", &netns]);
        let mut remote = Remote {
            netns: netns.clone(),
            address: address.clone(),
            dir: dir.clone(),
            key: format!("{dir}/id"),
            sshd: None,
        };
        let ns = |args: &[&str]| {
            let mut all = vec!["netns", "exec", netns.as_str()];
            all.extend_from_slice(args);
            run("ip", &all);
        };
        run(
            "ip",
            &[
                "link", "add", &outside, "type", "veth", "peer", "name", &inside,
            ],
        );
        run("ip", &["link", "set", &inside, "netns", &netns]);
        run(
            "ip",
            &[
                "addr",
                "add",
                &format!("10.254.{unique}.1/24"),
                "dev",
                &outside,
            ],
        );
        run("ip", &["link", "set", &outside, "up"]);
        ns(&[
            "ip",
            "addr",
            "add",
            &format!("{address}/24"),
            "dev",
            &inside,
        ]);
        ns(&["ip", "link", "set", &inside, "up"]);
        ns(&["ip", "link", "set", "lo", "up"]);

        // The host's own `zfs` and `zpool`, cache file and daemon directory.
        std::fs::create_dir_all(format!("{dir}/bin")).unwrap();
        for name in ["zfs", "zpool"] {
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zetta"), format!("{dir}/bin/{name}"))
                .unwrap();
        }
        run(
            "ssh-keygen",
            &[
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-f",
                &format!("{dir}/hostkey"),
            ],
        );
        run(
            "ssh-keygen",
            &["-q", "-t", "ed25519", "-N", "", "-f", &remote.key],
        );
        std::fs::copy(
            format!("{}.pub", remote.key),
            format!("{dir}/authorized_keys"),
        )
        .unwrap();
        let config = format!(
            "ListenAddress {address}\nHostKey {dir}/hostkey\nAuthorizedKeysFile {dir}/authorized_keys\n\
             PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile {dir}/sshd.pid\n\
             SetEnv PATH={dir}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
             ZETTA_CACHE_FILE={dir}/zpool.cache ZETTA_RUN_DIR={dir}/run TZ=UTC\n"
        );
        std::fs::write(format!("{dir}/sshd_config"), config).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let sshd = Command::new("ip")
            .args(["netns", "exec", &netns, SSHD, "-D", "-e", "-f"])
            .arg(format!("{dir}/sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(format!("{dir}/sshd.log")).unwrap())
            .spawn()
            .unwrap();
        remote.sshd = Some(sshd);
        let started = Instant::now();
        while remote.ssh(host, "true").code != 0 {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "sshd in {netns} does not answer: {}",
                std::fs::read_to_string(format!("{dir}/sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        remote
    }

    /// ssh options syncoid is given too.
    fn ssh_options(&self) -> String {
        format!(
            "-i {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes",
            self.key
        )
    }

    /// A command run on the remote host through ssh.
    fn ssh(&self, host: &Host, command: &str) -> common::Output {
        host.sh(&format!(
            "ssh {} root@{} '{command}'",
            self.ssh_options(),
            self.address
        ))
    }

    fn ssh_ok(&self, host: &Host, command: &str) -> String {
        let out = self.ssh(host, command);
        assert_eq!(out.code, 0, "ssh {command}: {}", out.stderr);
        out.stdout
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_zetta"))
            .args(["daemon", "--stop"])
            .env("ZETTA_RUN_DIR", format!("{}/run", self.dir))
            .output();
        if let Some(mut sshd) = self.sshd.take() {
            let _ = sshd.kill();
            let _ = sshd.wait();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.netns])
            .status();
    }
}

/// Full and then incremental replication to the other host: its pool holds the same
/// snapshots (guids) and, mounted there, the same tree.
#[test]
fn syncoid_replicates_to_a_second_host_over_ssh() {
    if !installed(SYNCOID) || !installed(SSHD) {
        return;
    }
    let host = Host::new();
    let remote = Remote::start(&host);
    host.pool("src", 512 << 20, false);
    host.zfs_ok(&["create", "src/data"]);
    let data = host.mnt("src/data");
    host.sh_ok(&format!(
        "cp -a /usr/share/doc/bash {data}/ && head -c 4M /dev/urandom > {data}/blob && zfs snapshot src/data@first"
    ));
    let disk = host.lab.disk("remote/backup.d0", 512 << 20);
    let backup_mnt = format!("{}/mnt/backup", remote.dir);
    remote.ssh_ok(
        &host,
        &format!("zpool create -m {backup_mnt} backup {disk}"),
    );
    assert_eq!(
        remote.ssh_ok(
            &host,
            "zpool get -o value -H feature@extensible_dataset backup"
        ),
        "enabled\n"
    );

    let target = format!("root@{}:backup/data", remote.address);
    let syncoid = |what: &str| {
        std::thread::sleep(Duration::from_millis(1100));
        let options = remote.ssh_options().replace("-i ", "--sshkey=");
        let options = options.replace("-o ", "--sshoption=");
        host.sh_ok(&format!("{SYNCOID} {options} {what}"))
    };
    let out = syncoid(&format!("src/data {target}"));
    assert!(
        out.starts_with("INFO: Sending oldest full snapshot src/data@first (~ "),
        "{out}"
    );
    let remote_guids = || {
        remote
            .ssh_ok(
                &host,
                "zfs list -Hp -r -t snapshot -o name,guid backup/data",
            )
            .replace("backup/data", "X")
    };
    assert_eq!(remote_guids(), host.snapshot_guids("src/data", "X"));
    // The other host's mounts are in its own mount namespace (`ip netns exec` makes one):
    // look at them from there.
    let remote_digest = || {
        remote.ssh_ok(
            &host,
            &format!("cd {backup_mnt}/data && tar --sort=name --numeric-owner -cf - . | md5sum"),
        )
    };
    assert_eq!(tree_digest(&host, &data), remote_digest());

    host.sh_ok(&format!("rm {data}/blob && echo later > {data}/later"));
    let out = syncoid(&format!("src/data {target}"));
    assert!(
        out.starts_with("Sending incremental src/data@syncoid_"),
        "{out}"
    );
    assert_eq!(remote_guids(), host.snapshot_guids("src/data", "X"));
    assert_eq!(tree_digest(&host, &data), remote_digest());
    // The remote pool belongs to the remote daemon, not to this host's.
    let local_pools = host.zfs_ok(&["list", "-d0", "-H", "-o", "name"]);
    assert_eq!(local_pools, "src\n");
}
