//! A second "host" reached over ssh, the way the seed posts replicate to a backup server
//! (`syncoid src/data root@host:backup/data`): a network namespace on this machine, joined
//! by a veth pair, running its own sshd (`ip netns exec … sshd -D`) with a key made for the
//! test. Its sessions find Zetta's `zfs` first in PATH and talk to a daemon of their own
//! (`SetEnv` in the sshd config: PATH, ZETTA_CACHE_FILE, ZETTA_RUN_DIR), which holds its
//! pools: each side has its own pools and daemon, as two machines would. `ip netns exec`
//! also gives the host its own mount namespace, so its mounts are looked at through ssh.
//! Users: `syncoid_ssh.rs` (Zetta to Zetta), `syncoid_zfs_fuse.rs` (zfs-fuse to Zetta).

use super::{Lab, Output};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const SSHD: &str = "/usr/sbin/sshd";

/// The second host: namespace, link, sshd, and the directory its `zfs` lives in.
pub struct Remote {
    netns: String,
    pub address: String,
    /// `<lab>/remote`: the host's `bin/zfs`, cache file, daemon directory, keys.
    pub dir: String,
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
    pub fn start(lab: &Lab) -> Remote {
        // Unique per process and per Remote of it (namespace and link names are global).
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let unique = (std::process::id() + 37 * COUNTER.fetch_add(1, Ordering::Relaxed)) % 200 + 20;
        let netns = format!("zr{unique}");
        let outside = format!("zr{unique}a");
        let inside = format!("zr{unique}b");
        let address = format!("10.254.{unique}.2");
        let dir = lab.path("remote");
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
        while remote.ssh(lab, "true").code != 0 {
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
    pub fn ssh_options(&self) -> String {
        format!(
            "-i {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes",
            self.key
        )
    }

    /// The same options in syncoid's words (`--sshkey=… --sshoption=…`).
    pub fn syncoid_options(&self) -> String {
        self.ssh_options()
            .replace("-i ", "--sshkey=")
            .replace("-o ", "--sshoption=")
    }

    /// A command run on the remote host through ssh (no single quotes in it).
    pub fn ssh(&self, lab: &Lab, command: &str) -> Output {
        lab.sh(&format!(
            "ssh {} root@{} '{command}'",
            self.ssh_options(),
            self.address
        ))
    }

    pub fn ssh_ok(&self, lab: &Lab, command: &str) -> String {
        let out = self.ssh(lab, command);
        assert_eq!(out.code, 0, "ssh {command}: {}", out.stderr);
        out.stdout
    }

    /// A shell script (any quoting) run by `sh` on the remote host, given on its stdin;
    /// it must succeed; its stdout.
    pub fn script_ok(&self, lab: &Lab, script: &str) -> String {
        let file = format!("{}/script.sh", self.dir);
        std::fs::write(&file, script).unwrap();
        let out = lab.sh(&format!(
            "ssh {} root@{} sh < '{file}'",
            self.ssh_options(),
            self.address
        ));
        assert_eq!(
            out.code, 0,
            "ssh sh: {script}\nstdout: {}\nstderr: {}",
            out.stdout, out.stderr
        );
        out.stdout
    }

    /// `Lab::tree_digest` of a directory the remote host has mounted (its mount namespace).
    pub fn tree_digest(&self, lab: &Lab, dir: &str, exclude: Option<&str>) -> String {
        let tar = format!("{}/tree.tar", self.dir);
        self.script_ok(lab, &super::tree_digest_script(dir, exclude, &tar))
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
