#!/usr/bin/env bash
# Side-by-side benchmark: a raw directory, kernel btrfs on loop devices, zfs-fuse and
# Zetta (FUSE), all on backing files of one size on one host filesystem.
#
#   bash bench/run.sh --quick      # under 5 minutes on a quiet machine
#   bash bench/run.sh              # full sizes
#
# Run as root. Installs fio, zfs-fuse, btrfs-progs and util-linux when missing, prints a
# markdown section and writes it into docs/PERFORMANCE.md. Zetta is target/release/zetta
# (built with cargo when missing). Everything it sets up (mounts, loop devices, the zfs-fuse
# and zetta daemons, pools, backing files) is torn down on exit, failure or Ctrl-C.
#
# Files: this one (options, state and teardown, tools, the loop over contenders),
# contenders.sh (setting each contender up), workloads.sh (what is measured on each),
# corpus.py, fio_mbps.py, storm.py (helpers) and report.py (the markdown section).
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(...) fails the command that uses it
export LC_ALL=C           # the tools' output parsed below, and a '.' in $EPOCHREALTIME

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$BENCH")
COMMAND="bash bench/run.sh${*:+ $*}"
ALL_CONTENDERS=(raw btrfs btrfs-raid1 zfs-fuse zfs-fuse-comp zfs-fuse-mirror zetta zetta-lz4
    zetta-mirror)

usage() {
    cat <<'EOF'
usage: bash bench/run.sh [--quick] [--dir DIR] [--only LIST] [--workloads volume] [--no-doc]

  --quick      small sizes (512M sequential, 64m x 8 random writers capped at 20 s, 10k
               files, 256M scrubbed and sent, 64M text, 256M VM image); under 5 min on a
               quiet machine
  --dir DIR    work directory on the filesystem to test on (default /var/tmp/zetta-bench)
  --only LIST  comma-separated contenders to run (default: all of
               raw,btrfs,btrfs-raid1,zfs-fuse,zfs-fuse-comp,zfs-fuse-mirror,zetta,
               zetta-lz4,zetta-mirror)
  --workloads volume
               only the volume workload (4k random and 1M sequential writes on a block
               device of each contender); implies --no-doc (the section holds every
               workload), so copy its volume table by hand
  --no-doc     print the section but leave docs/PERFORMANCE.md alone
EOF
}

MODE=full
DIR=/var/tmp/zetta-bench
ONLY=$(IFS=,; echo "${ALL_CONTENDERS[*]}")
WRITE_DOC=1
WORKLOADS=all
while (($#)); do
    case $1 in
        --quick) MODE=quick ;;
        --dir) DIR=${2:?--dir needs a directory}; shift ;;
        --only) ONLY=${2:?--only needs a list}; shift ;;
        --no-doc) WRITE_DOC=0 ;;
        --workloads) WORKLOADS=${2:?--workloads needs a name}; shift
            [[ $WORKLOADS == volume ]] || { usage >&2; exit 2; }
            WRITE_DOC=0 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
    shift
done

# DATA_MIB: the incompressible dataset that is scrubbed and sent; TEXT_MIB and VM_MIB: the
# compressible corpus (a text tar and a VM-image-like file).
if [[ $MODE == quick ]]; then
    SEQ_MIB=512 RW_SIZE=64m RW_JOBS=8 FILES=10000 CAP=20 VDEV_SIZE=3G
    DATA_MIB=256 TEXT_MIB=64 VM_MIB=256 VOL_SIZE=512M
else
    SEQ_MIB=2048 RW_SIZE=256m RW_JOBS=16 FILES=100000 CAP=600 VDEV_SIZE=8G
    DATA_MIB=2048 TEXT_MIB=256 VM_MIB=1024 VOL_SIZE=2G
fi
RR_JOBS=4        # 16k random readers, each over its own quarter of the sequential file
DATA_FILES=8     # the scrubbed and sent dataset is this many files of DATA_MIB / DATA_FILES
SNAPSHOT_REPEATS=3  # snapshot times are the median of this many snapshots

log() { printf '%s\n' "$*" >&2; }
die() { log "run.sh: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root (loop devices, mounts, drop_caches, zfs-fuse, zetta)"

# ---------------------------------------------------------------- state and teardown

RUN=""                    # the run's own directory under $DIR, made after the tools
STATE=""                  # what is set up, one "kind argument" a line, undone newest first
OUR_POLICY_RC=""          # set while we hold a policy-rc.d that keeps services from starting
ZPOOL=""
ZFS=""
# This checkout's build: target/release/zetta, or under CARGO_TARGET_DIR when that is set
# (cargo build puts it there too).
TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
[[ $TARGET_DIR == /* ]] || TARGET_DIR=$REPO/$TARGET_DIR
ZETTA=$TARGET_DIR/release/zetta
DIR_CREATED=0

note_state() { printf '%s %s\n' "$1" "$2" >>"$STATE"; }

# Is PID a process named COMM that has not exited (zombies do not count)?
daemon_alive() {  # daemon_alive PID COMM
    local state
    [[ $(cat "/proc/$1/comm" 2>/dev/null) == "$2" ]] || return 1
    state=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
    [[ -n $state && $state != Z && $state != X ]]
}
zfs_fuse_alive() { daemon_alive "$1" zfs-fuse; }

# Stop a daemon we started: by its id, after checking it still is that program.
stop_daemon() {  # stop_daemon PID [COMM]
    local pid=$1 comm=${2:-zfs-fuse} i
    daemon_alive "$pid" "$comm" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do
        daemon_alive "$pid" "$comm" || return 0
        sleep 0.1
    done
    log "$comm $pid did not stop on SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

# zetta_cli CACHE ARGS...: Zetta's CLI talking to the daemon of cache file CACHE (its
# socket is in CACHE.run), whatever ZETTA_* the caller's environment holds.
zetta_cli() {
    local cache=$1
    shift
    env -u ZETTA_RUN_DIR -u ZETTA_DIRECT -u ZETTA_MOUNT ZETTA_CACHE_FILE="$cache" \
        "$ZETTA" "$@"
}

# Stop a zetta daemon we started: `zetta daemon --stop` (commits its pools, unmounts and
# waits for it to be gone), then by its id if it is somehow still there.
stop_zetta() {  # stop_zetta PID CACHE
    timeout 120 env -u ZETTA_RUN_DIR -u ZETTA_DIRECT -u ZETTA_MOUNT ZETTA_CACHE_FILE="$2" \
        "$ZETTA" daemon --stop >/dev/null 2>&1 || log "teardown: zetta daemon --stop failed"
    stop_daemon "$1" zetta
}

mounts_under_run() {
    [[ -n $RUN ]] || return 0
    awk -v p="$RUN/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r
}

# Undo everything recorded in $STATE, newest first.
teardown() {
    local kind arg m first rest
    local -a files=()
    [[ -n $STATE && -s $STATE ]] || return 0
    while read -r kind arg; do
        read -r first rest <<<"$arg"  # for the kinds with two arguments, the 2nd a path
        case $kind in
            pool) "$ZPOOL" destroy -f "$arg" >/dev/null 2>&1 ||
                      "$ZPOOL" export -f "$arg" >/dev/null 2>&1 ||
                      log "teardown: could not destroy zfs-fuse pool $arg" ;;
            zfsd) stop_daemon "$arg" zfs-fuse ;;
            zettapool) zetta_cli "$rest" zpool destroy -f "$first" >/dev/null 2>&1 ||
                       zetta_cli "$rest" zpool export -f "$first" >/dev/null 2>&1 ||
                       log "teardown: could not destroy zetta pool $first" ;;
            zettad) stop_zetta "$first" "$rest" ;;
            mount) umount "$arg" 2>/dev/null || umount -l "$arg" 2>/dev/null || true ;;
            loop) losetup -d "$arg" 2>/dev/null || log "teardown: losetup -d $arg failed" ;;
            file) files+=("$arg") ;;
        esac
    done < <(tac "$STATE")
    # Anything still mounted under the run dir (a FUSE mount left by a dead daemon).
    while read -r m; do
        [[ -n $m ]] && { umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
    done < <(mounts_under_run)
    # Backing files last, once nothing holds them: their space is free for the next one.
    if [[ -z $(mounts_under_run) ]]; then
        ((${#files[@]} == 0)) || rm -f -- "${files[@]}"
    fi
    : >"$STATE"
}

cleanup() {
    local rc=$?
    trap - EXIT
    trap '' INT TERM  # a second Ctrl-C must not cut the teardown short
    teardown || true
    if [[ -n $OUR_POLICY_RC ]]; then
        rm -f "$OUR_POLICY_RC"
    fi
    if [[ -z $RUN ]]; then
        :
    elif [[ -n $(mounts_under_run) ]]; then
        log "cleanup: still mounted under $RUN, leaving it in place:"
        mounts_under_run >&2
    else
        rm -rf --one-file-system "$RUN"
        if ((DIR_CREATED)); then
            rmdir "$DIR" 2>/dev/null || true
        fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- tools

ZFS_FUSE_PKG=zfs-fuse

install_missing() {
    local -a pkgs=()
    command -v fio >/dev/null || pkgs+=(fio)
    command -v mkfs.btrfs >/dev/null || pkgs+=(btrfs-progs)
    command -v losetup >/dev/null || pkgs+=(util-linux)
    command -v python3 >/dev/null || pkgs+=(python3)
    dpkg -s "$ZFS_FUSE_PKG" >/dev/null 2>&1 || pkgs+=("$ZFS_FUSE_PKG")
    ((${#pkgs[@]})) || return 0
    command -v apt-get >/dev/null || die "missing ${pkgs[*]} and no apt-get to install them"
    log "installing: ${pkgs[*]}"
    # Keep the packages' services (zfs-fuse) from starting: the harness runs its own daemon.
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        OUR_POLICY_RC=/usr/sbin/policy-rc.d
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
    if [[ -n $OUR_POLICY_RC ]]; then
        rm -f "$OUR_POLICY_RC"
        OUR_POLICY_RC=""
    fi
    if [[ " ${pkgs[*]} " == *" $ZFS_FUSE_PKG "* ]]; then
        # Installed just now: do not let it start at boot and hold the zfs-fuse socket.
        if command -v systemctl >/dev/null; then
            systemctl disable zfs-fuse.service >/dev/null 2>&1 || true
        fi
        if command -v update-rc.d >/dev/null; then
            update-rc.d zfs-fuse disable >/dev/null 2>&1 || true
        fi
        log "zfs-fuse installed; its boot-time service is disabled (the harness runs its own)"
    fi
}

# zfs-fuse's own binaries, by absolute path from its package, so that a Zetta `zpool` or
# `zfs` on PATH is never used for zfs-fuse.
zfs_fuse_bin() {
    { dpkg -L "$ZFS_FUSE_PKG" 2>/dev/null || true; } | grep -E "/s?bin/$1\$" | head -n1 || true
}

# Zetta: the release binary of this checkout, built when missing and a zetta contender runs.
want_zetta() {
    local k
    for k in ${ONLY//,/ }; do
        [[ $k == zetta* ]] && return 0
    done
    return 1
}

install_missing
if [[ ! -x $ZETTA ]] && want_zetta; then
    if command -v cargo >/dev/null; then
        log "building $ZETTA (cargo build --release -p zetta-cli)"
        (cd "$REPO" && cargo build --release -p zetta-cli >&2) || log "cargo build failed"
    else
        log "no $ZETTA and no cargo on PATH: the zetta contenders will be skipped"
    fi
fi
# Never rebuilt when present: say so when the sources are newer than the binary.
if [[ -x $ZETTA ]] && want_zetta &&
    [[ -n $(find "$REPO/crates" -name '*.rs' -newer "$ZETTA" -print -quit 2>/dev/null) ]]; then
    log "warning: sources under crates/ are newer than $ZETTA; rebuild it to measure them"
fi
ZFS_FUSE=$(zfs_fuse_bin zfs-fuse)
ZPOOL=$(zfs_fuse_bin zpool)
ZFS=$(zfs_fuse_bin zfs)
ZFS_SOCKET=/var/run/zfs/zfs_socket

if [[ ! -d $DIR ]]; then
    mkdir -p "$DIR"
    DIR_CREATED=1
fi
DIR=$(cd "$DIR" && pwd)
RUN=$(mktemp -d "$DIR/run.XXXXXX")
STATE=$RUN/state
RESULTS=$RUN/results.tsv  # contender <TAB> metric <TAB> value
INFO=$RUN/info.tsv        # key <TAB> value
: >"$STATE"
: >"$RESULTS"
: >"$INFO"
# One build for the whole run: others may rebuild target/release while it goes on (and a
# profiler then still finds the symbols of the running daemon).
ZETTA_BUILT=""
ZETTA_SOURCE=$ZETTA
if [[ -x $ZETTA ]] && want_zetta; then
    ZETTA_BUILT=$(date -u -r "$ZETTA" '+%Y-%m-%d %H:%M UTC')
    mkdir "$RUN/bin"  # not RUN/zetta: that is the zetta contender's mountpoint
    cp "$ZETTA" "$RUN/bin/zetta"
    ZETTA=$RUN/bin/zetta
fi

# shellcheck source=bench/workloads.sh
. "$BENCH/workloads.sh"
# shellcheck source=bench/contenders.sh
. "$BENCH/contenders.sh"

# ---------------------------------------------------------------- machine and run

info() { printf '%s\t%s\n' "$1" "$2" >>"$INFO"; }

machine_info() {
    local src fstype dev model rota
    info date "$(date -u '+%Y-%m-%d %H:%M UTC')"
    info commit "$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    info mode "$MODE"
    info command "$COMMAND"
    info nproc "$(nproc)"
    info cpu "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    info memory "$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    info kernel "$(uname -sr)"
    read -r src fstype < <(findmnt -no SOURCE,FSTYPE -T "$DIR")
    dev=$(lsblk -dno PKNAME "$src" 2>/dev/null || true)
    dev=${dev:-${src#/dev/}}
    model=$(lsblk -dno MODEL "/dev/$dev" 2>/dev/null | awk '{ $1 = $1; print }' || true)
    rota=$(lsblk -dno ROTA "/dev/$dev" 2>/dev/null | tr -d ' ' || true)
    case $rota in 0) rota="non-rotational" ;; 1) rota="rotational (as the kernel reports it)" ;; esac
    [[ -e /sys/block/$dev/device/driver ]] &&
        model="${model:+$model, }driver $(basename "$(readlink -f "/sys/block/$dev/device/driver")")"
    info storage "$src, $fstype; disk $dev${model:+: $model}${rota:+, $rota}"
    info load "$(cut -d' ' -f1-3 /proc/loadavg)"
    info versions "$(fio --version), zfs-fuse $(dpkg-query -W -f='${Version}' "$ZFS_FUSE_PKG" 2>/dev/null), btrfs-progs $(dpkg-query -W -f='${Version}' btrfs-progs 2>/dev/null)"
    if [[ -n $ZETTA_BUILT ]]; then
        info zetta "$("$ZETTA" version 2>/dev/null), $ZETTA_SOURCE built $ZETTA_BUILT"
    else
        info zetta "not run or not built"
    fi
    info dir "$DIR"
    info vdev_size "$VDEV_SIZE"
    info seq_size "$SEQ_MIB MiB"
    info rw_size "$RW_SIZE"
    info rw_jobs "$RW_JOBS"
    info rr_jobs "$RR_JOBS"
    info cap "$CAP"
    info files "$FILES"
    info data_size "$DATA_MIB MiB"
    info data_files "$DATA_FILES"
    info snapshot_repeats "$SNAPSHOT_REPEATS"
    info vol_size "$VOL_SIZE"
    info workloads "$WORKLOADS"
}

# Room for the largest contender at once: a mirror whose two sparse files fill up (freed
# blocks are not given back to the host), the receiving pool's copies of the dataset (sent
# and cp'd, on each side of a mirror), and the corpus files.
need_space() {
    local avail need
    avail=$(df --output=avail -B1 "$DIR" | tail -n1)
    need=$(numfmt --from=iec "$VDEV_SIZE")
    need=$((need * 2 + (5 * DATA_MIB + TEXT_MIB + VM_MIB) * 1048576))
    ((avail > need)) || die "need $(numfmt --to=iec "$need") free in $DIR, have $(numfmt --to=iec "$avail")"
}

need_space
machine_info
if ! echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
    DROP_CACHES="no: /proc/sys/vm/drop_caches not writable here, reads may be warm"
    log "warning: cannot drop caches ($DROP_CACHES)"
fi
info drop_caches "$DROP_CACHES"
[[ $WORKLOADS == volume ]] || make_corpus

START=$SECONDS
IFS=, read -r -a WANT <<<"$ONLY"
for key in "${ALL_CONTENDERS[@]}"; do
    if [[ " ${WANT[*]} " != *" $key "* ]]; then
        printf '%s\tskip\t%s\n' "$key" "not selected (--only)" >>"$RESULTS"
        continue
    fi
    log "=== $key"
    set +e
    (
        set -euo pipefail
        "contender_$key"
    )
    rc=$?
    set -e
    teardown
    if ((rc != 0)); then
        ((rc == 130 || rc == 143)) && exit "$rc"
        printf '%s\tfail\t%s\n' "$key" "exit status $rc, see the log above" >>"$RESULTS"
        log "$key: FAILED (exit $rc); continuing with the next contender"
    fi
done
info wall "$(((SECONDS - START) / 60)) min $(((SECONDS - START) % 60)) s"

report=(python3 "$BENCH/report.py" "$RESULTS" "$INFO")
((WRITE_DOC)) && report+=(--doc "$REPO/docs/PERFORMANCE.md")
"${report[@]}"
