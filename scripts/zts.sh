#!/usr/bin/env bash
# CLI conformance: runs OpenZFS's own test suite (ZTS, the ksh tests of Debian's zfs-test
# 2.3.2) against Zetta's `zpool` and `zfs`, group by group of `functional/cli_root`.
#
#   bash scripts/zts.sh [GROUP...]     # as root; default: every cli_root zpool*/zfs* group
#   bash scripts/zts.sh zfs_get zpool_create
#
# What it does, in order (issue 18 says why each step is there):
# - Installs what it needs, idempotently: the suite through scripts/oracle.sh (unpacked into
#   /opt/zetta-oracle, never installed: it depends on the kernel module), ksh, parted, sudo.
# - Copies target/release/zetta (built if missing) into a private work directory under
#   /var/tmp, so that a rebuild during the run changes nothing, and builds STF_PATH there:
#   Zetta's zpool and zfs, the system tools `include/commands.cfg` lists, the suite's own
#   helper binaries. OpenZFS's zdb and zinject are left out (they read the kernel's pools);
#   Zetta's zinject stands in (import tests' cleanup clears handlers with it).
# - Makes DISKS: three loop devices on sparse files of $ZTS_DISK_SIZE (default 4G), named as
#   zfs-tests.sh names them (loop0...); ZTS_FILE_VDEVS=1 uses the files themselves.
# - Puts the run in a memory cgroup of $ZTS_MEMORY_LIMIT (default 6G): a runaway daemon is
#   killed by the kernel inside the cgroup, not some other engineer's process.
# - Runs the suite's test-runner in a private mount namespace (`unshare -m`) with a private
#   tmpfs on /tmp (a test's cleanup can `rm -rf /tmp/`) and a private overlay on /etc (the
#   hostid tests write /etc/hostid), with its own Zetta daemon
#   (ZETTA_RUN_DIR and ZETTA_CACHE_FILE inside the work directory): the daemon is started by
#   the first zpool command inside the namespace, so the tests see its FUSE mounts, and no
#   other daemon is touched. It is stopped at the end, by its pid file.
# - The runfile is common.run + linux.run cut down to the chosen groups, less the tests on
#   scripts/zts/not-applicable.txt (each there with the reason it cannot mean anything here).
# - Prints one line per test (group/test RESULT), the summary, and the not-applicable tests
#   of the chosen groups with their reasons; the runner's logs stay in the work directory.
#
# ZTS_EXCLUDE="group/test ..." leaves more tests out of one run (reported as excluded), e.g.
# zpool_create/zpool_create_024_pos, which runs into the runner's 10-minute timeout.
#
# Never edit this file while a run is going: bash reads a script as it goes (replace it with
# a new file instead).
#
# Exit status: 0 when every test that ran passed, 1 otherwise. Not part of scripts/test.sh:
# the whole of cli_root takes hours on two cores.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)
log_name=zts
. scripts/lib.sh

prefix="${ZETTA_ORACLE_PREFIX:-/opt/zetta-oracle}"
share="$prefix/usr/share/zfs"
suite="$share/zfs-tests"
not_applicable="$repo/scripts/zts/not-applicable.txt"

# ---------------------------------------------------------------------------------------
# Inside the namespace: `zts.sh --inner WORK GROUP...`, started by the outer part below.
# ---------------------------------------------------------------------------------------
if [ "${1:-}" = "--inner" ]; then
    work=$2
    shift 2
    # A private /tmp: what the tests create or wipe there stays in this namespace.
    mount -t tmpfs -o size=2G,mode=1777 zts-tmp /tmp
    # A private /etc (an overlay whose writes land in the work directory): the hostid tests
    # write and remove /etc/hostid with zgenhostid, zpool_expand's setup links
    # /etc/zfs/vdev_id.conf; none of that may reach the machine's own /etc (zfs-fuse and
    # the other engineers' daemons read /etc/hostid). Zetta's daemon, started in here,
    # reads the private one.
    mkdir -p "$work/etc-upper" "$work/etc-work"
    mount -t overlay zts-etc \
        -o "lowerdir=/etc,upperdir=$work/etc-upper,workdir=$work/etc-work" /etc

    export ZETTA_RUN_DIR="$work/run" ZETTA_CACHE_FILE="$work/zpool.cache"
    unset ZETTA_DIRECT ZETTA_MOUNT
    export STF_SUITE="$suite" STF_TOOLS="$share/test-runner" STF_PATH="$work/bin"
    export DISKS KEEP="zts-keeps-no-pool" __ZFS_POOL_EXCLUDE="zts-keeps-no-pool"
    DISKS=$(cat "$work/disks")
    export FILEDIR="$work/filedir" TMPDIR="$work/filedir"
    # OpenZFS's compatibility.d is the oracle's copy (no OpenZFS is installed under /usr):
    # the tests list it (ZPOOL_COMPAT_DIR) and Zetta's daemon reads it (ZETTA_COMPATIBILITY_D).
    export ZPOOL_COMPAT_DIR="$share/compatibility.d" ZETTA_COMPATIBILITY_D="$share/compatibility.d"
    # On a failure the runner calls these: the tail of Zetta's daemon log goes into the
    # failed test's log instead of the kernel's dmesg.
    export TESTFAIL_CALLBACKS="$work/zetta_log_callback.ksh"
    # As zfs-tests.sh: the suite's defaults (TESTPOOL, TESTFS...) in the runner's environment.
    set +u
    # shellcheck disable=SC1091
    . "$STF_SUITE/include/default.cfg"
    set -u
    status=0
    PATH="$STF_PATH" python3 "$STF_TOOLS/bin/test-runner.py" \
        -c "$work/cli_root.run" -T functional -i "$STF_SUITE" -o "$work/logs" \
        >"$work/runner.out" 2>&1 || status=$?
    # The run's pools go, then its daemon: each step bounded (a daemon a test left wedged
    # must not hold the run), the daemon killed by its pid file if it does not stop.
    if [ -f "$ZETTA_RUN_DIR/zetta.pid" ]; then
        for pool in $(timeout 60 "$work/bin/zpool" list -H -o name 2>/dev/null); do
            timeout 60 "$work/bin/zpool" destroy -f "$pool" >/dev/null 2>&1 || true
        done
        timeout 60 "$work/bin/zetta" daemon --stop >/dev/null 2>&1 || true
        pid=$(cat "$ZETTA_RUN_DIR/zetta.pid" 2>/dev/null || true)
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill -9 "$pid" 2>/dev/null || true
        fi
    fi
    exit "$status"
fi

# ---------------------------------------------------------------------------------------
# Outside: install, prepare, run the inner part, report, clean up.
# ---------------------------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || die "run as root (loop devices, mounts, a memory cgroup)"
disk_size="${ZTS_DISK_SIZE:-4G}"
memory_limit="${ZTS_MEMORY_LIMIT:-6G}"

missing=()
# Packages of the tools commands.cfg lists that the cli_root tests call.
for tool in ksh:ksh parted:parted sudo:sudo getfattr:attr getfacl:acl cpio:cpio pax:pax \
    xxh128sum:xxhash; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
        die "could not install ${missing[*]}"
fi
[ -d "$suite/tests/functional/cli_root" ] || bash scripts/oracle.sh ||
    die "could not install OpenZFS's test suite (scripts/oracle.sh)"
[ -x target/release/zetta ] || cargo build --release -p zetta-cli

# The groups: the arguments (with or without cli_root/), else every zpool*/zfs* group.
groups=()
if [ "$#" -gt 0 ]; then
    for group in "$@"; do
        group=${group#cli_root/}
        [ -d "$suite/tests/functional/cli_root/$group" ] || die "no cli_root group $group"
        groups+=("$group")
    done
else
    while read -r group; do
        groups+=("$group")
    done < <(cd "$suite/tests/functional/cli_root" && ls -d zpool zpool_* zfs zfs_* 2>/dev/null)
fi

mkdir -p /var/tmp
work=$(mktemp -d /var/tmp/zts.XXXXXX)
chmod 0755 "$work"
mkdir -p "$work/bin" "$work/filedir" "$work/logs" "$work/run"
loops=()
# Loop devices bound before the run: a test may bind its own (over a file in the private
# /tmp or a volume) and leave it; cleanup detaches every device not in this list.
loops_before=$(losetup -a -O NAME -n 2>/dev/null | sort)
cgroup=""
cleanup() {
    set +e
    if [ -n "$cgroup" ] && [ -d "$cgroup" ]; then
        # What is left of the run (a daemon the inner part could not stop): by pid.
        local pid
        for pid in $(cat "$cgroup/cgroup.procs" 2>/dev/null); do
            kill -9 "$pid" 2>/dev/null
        done
        sleep 1
        rmdir "$cgroup" 2>/dev/null
    fi
    for loop in "${loops[@]}"; do
        losetup -d "$loop" 2>/dev/null
    done
    # Only those over a file of the run (the namespace's private /tmp is gone by now, so
    # its files no longer exist here; /testpool* and the work directory are the run's):
    # other users of this machine may bind loop devices meanwhile.
    local left back
    for left in $(comm -13 <(printf '%s\n' "$loops_before") <(losetup -a -O NAME -n 2>/dev/null | sort)); do
        back=$(losetup -n -O BACK-FILE "$left" 2>/dev/null)
        back=${back% (deleted)}
        case "$back" in
        /testpool* | "$work"/*) ;;
        *) [ -e "$back" ] && continue ;;
        esac
        log "detaching $left ($back), bound by a test and left behind"
        losetup -d "$left" 2>/dev/null
    done
    rm -f "$work"/vdev*
    rm -rf "$work/run" "$work/filedir" "$work/bin"
    # The namespace is private for mounts only: the mountpoints the tests' pools made at /
    # (/testpool, /testpool-N-PID...) are on the real root. Empty ones go.
    rmdir /testpool* 2>/dev/null
}
trap cleanup EXIT

# STF_PATH: Zetta's commands (from a private copy of the binary), the system's tools, the
# suite's helpers. As zfs-tests.sh's constrain_path does, minus OpenZFS's own binaries.
cp target/release/zetta "$work/bin/zetta"
# Zetta's own zinject too (issue 20): zpool_import.kshlib's cleanup runs `zinject -c all`
# after every import test, and failed on its absence; the tests that inject faults are on
# the not-applicable list.
for name in zpool zfs zinject; do ln -s zetta "$work/bin/$name"; done
# OpenZFS's zgenhostid only writes /etc/hostid (no kernel, no pool): the hostid tests and
# mmp_set_hostid run it, inside the private /etc above.
ln -s "$prefix/sbin/zgenhostid" "$work/bin/zgenhostid"
# OpenZFS's zstream reads and writes send streams only (zfs_receive_013_pos pipes
# `zstream redup` into Zetta's receive): a stream tool, not a pool reader.
ln -s "$prefix/sbin/zstream" "$work/bin/zstream"
# shellcheck disable=SC1091
. "$suite/include/commands.cfg"
link_first() {
    # link_first NAME DIR...: links NAME from the first DIR that has it.
    local name=$1 dir
    shift
    [ -e "$work/bin/$name" ] && return 0
    for dir in "$@"; do
        if [ -e "$dir/$name" ] && [ ! -d "$dir/$name" ]; then
            ln -s "$dir/$name" "$work/bin/$name"
            return 0
        fi
    done
    return 1
}
missing_tools=()
for name in $SYSTEM_FILES_COMMON $SYSTEM_FILES_LINUX; do
    link_first "$name" /usr/local/bin /usr/local/sbin /usr/bin /usr/sbin /bin /sbin ||
        missing_tools+=("$name")
done
for name in $ZFSTEST_FILES; do
    link_first "$name" "$suite/bin" || missing_tools+=("$name")
done
ln -sf /sbin/fsck.ext4 "$work/bin/fsck"
ln -sf /sbin/mkfs.ext4 "$work/bin/newfs"
ln -sf "$work/bin/gzip" "$work/bin/compress"
ln -sf "$work/bin/gunzip" "$work/bin/uncompress"
printf '#!/bin/ksh\n# Zetta: the tail of the daemon log, in place of the kernel dmesg.\n%s\n' \
    "tail -n 40 \"$work/run/zetta.log\" 2>/dev/null" >"$work/zetta_log_callback.ksh"
chmod 0755 "$work/zetta_log_callback.ksh"

# DISKS.
disks=()
for i in 1 2 3; do
    truncate -s "$disk_size" "$work/vdev$i"
    if [ "${ZTS_FILE_VDEVS:-0}" = 1 ]; then
        disks+=("$work/vdev$i")
    else
        loop=$(losetup --show -f "$work/vdev$i") || die "losetup failed on $work/vdev$i"
        loops+=("$loop")
        disks+=("${loop##*/}")
    fi
done
echo "${disks[*]}" >"$work/disks"

# The runfile: the chosen groups' sections of common.run and linux.run, less the tests on
# the not-applicable list; `group/test` lines of that list are printed for the summary.
ZTS_EXCLUDE="${ZTS_EXCLUDE:-}" python3 - "$share/runfiles/common.run" "$share/runfiles/linux.run" \
    "$not_applicable" "$work/cli_root.run" "$work/not-applicable.chosen" "${groups[@]}" <<'EOF'
import configparser, os, sys
common, linux, na_path, out_path, na_out, *groups = sys.argv[1:]
na = {}
for name in os.environ.get("ZTS_EXCLUDE", "").split():
    na[name] = "excluded from this run (ZTS_EXCLUDE)"
with open(na_path) as f:
    for line in f:
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        key, _, reason = line.partition(" ")
        na[key] = reason.strip()
src = configparser.RawConfigParser()
src.read([common, linux])
dst = configparser.RawConfigParser()
for opt, value in src.defaults().items():
    dst.set("DEFAULT", opt, value)
skipped = []
for section in src.sections():
    path = section.split(":", 1)[0]
    prefix = "tests/functional/cli_root/"
    if not path.startswith(prefix) or path[len(prefix):] not in groups:
        continue
    group = path[len(prefix):]
    tests = eval(src.get(section, "tests"))
    kept = []
    for test in tests:
        reason = na.get(f"{group}/{test}") or na.get(f"{group}/*")
        if reason is None:
            kept.append(test)
        else:
            skipped.append(f"{group}/{test} {reason}")
    if not kept:
        continue
    dst.add_section(section)
    for opt in src.options(section):
        if opt in src.defaults() and src.get(section, opt) == src.defaults()[opt]:
            continue
        dst.set(section, opt, src.get(section, opt))
    dst.set(section, "tests", repr(kept))
with open(out_path, "w") as f:
    dst.write(f)
with open(na_out, "w") as f:
    f.write("".join(s + "\n" for s in skipped))
EOF

# The memory guard: a cgroup (v1 memory controller, else v2) holding this shell's children.
limit_bytes=$(numfmt --from=iec "$memory_limit")
if [ -d /sys/fs/cgroup/memory ] && mkdir "/sys/fs/cgroup/memory/zts-$$" 2>/dev/null; then
    cgroup="/sys/fs/cgroup/memory/zts-$$"
    echo "$limit_bytes" >"$cgroup/memory.limit_in_bytes"
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && mkdir "/sys/fs/cgroup/zts-$$" 2>/dev/null; then
    cgroup="/sys/fs/cgroup/zts-$$"
    echo "$limit_bytes" >"$cgroup/memory.max"
else
    die "no memory cgroup could be made: refusing to run without a memory guard"
fi

log "groups: ${groups[*]}"
log "work directory: $work (DISKS: ${disks[*]}; memory limit $memory_limit)"
[ "${#missing_tools[@]}" -eq 0 ] || log "tools missing from STF_PATH: ${missing_tools[*]}"
status=0
# The subshell moves itself into the cgroup, then becomes the namespace's first process.
(
    echo "$BASHPID" >"$cgroup/cgroup.procs"
    exec unshare -m --propagation private bash "$repo/scripts/zts.sh" --inner "$work" "${groups[@]}"
) || status=$?

# Per-test results: "group/test RESULT" from the runner's "Test: PATH (run as root) [..] [R]"
# ("Test (Linux): ..." for the sections of linux.run, whose logs are under GROUP:Linux/).
sed -n 's|^Test[^:]*: .*/cli_root/\([^ ]*\) (run as [^)]*) \[[0-9:]*\] \[\([A-Z]*\)\]$|\1 \2|p' \
    "$work/runner.out" | grep -v -E '^[^ ]*/(setup|cleanup) ' | sort >"$work/results.txt" || true
setup_failures=$(sed -n 's|^Test[^:]*: .*/cli_root/\([^ ]*/\(setup\|cleanup\)\) (run as [^)]*) \[[0-9:]*\] \[\([A-Z]*\)\]$|\1 \3|p' \
    "$work/runner.out" | grep -v ' PASS$' || true)
cat "$work/results.txt"
if [ -n "$setup_failures" ]; then
    printf '%s\n' "$setup_failures" | sed 's/^/setup or cleanup: /'
fi
count() { grep -c " $1\$" "$work/results.txt" || true; }
pass=$(count PASS)
fail=$(count FAIL)
skip=$(count SKIP)
killed=$(count KILLED)
na_count=$(grep -c . "$work/not-applicable.chosen" || true)
echo
echo "Not applicable (not run):"
sed 's/^/  /' "$work/not-applicable.chosen"
echo
log "logs: $work/logs (runner output: $work/runner.out)"
echo "zts: ${pass} passed, $((fail + killed)) failed, ${skip} skipped (${killed} killed), ${na_count} not applicable"
if [ "$status" -ne 0 ] && [ "$pass" -eq 0 ] && [ "$fail" -eq 0 ]; then
    tail -20 "$work/runner.out" >&2
    die "the runner failed (exit $status)"
fi
[ "$((fail + killed))" -eq 0 ]
