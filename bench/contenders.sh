# shellcheck shell=bash
# Sourced by bench/run.sh: setting up each contender, and the receiving side of its
# send | receive.
#
# `contender_KEY` runs in a subshell with set -e; everything it sets up is written to $STATE
# (note_state) as it happens, for run.sh's teardown. A contender that cannot be set up here
# records why with `skip` and returns 0; then it sets the CUR_* variables that workloads.sh
# describes and calls `workloads KEY MOUNTPOINT`.

new_loop() {  # new_loop KEY FILE: print the loop device over a new sparse FILE
    local dev
    note_state file "$2"
    truncate -s "$VDEV_SIZE" "$2"
    if ! dev=$(losetup -f --show "$2" 2>"$RUN/err"); then
        skip "$1" "loop devices unavailable: $(tail -n1 "$RUN/err")"
        return 1
    fi
    note_state loop "$dev"
    printf '%s\n' "$dev"
}

btrfs_ok() {
    if ! grep -qw btrfs /proc/filesystems && ! modprobe btrfs 2>/dev/null; then
        skip "$1" "the kernel has no btrfs (not in /proc/filesystems, modprobe btrfs failed)"
        return 1
    fi
}

btrfs_mount() {  # btrfs_mount KEY MOUNTPOINT DEV...
    local key=$1 m=$2
    shift 2
    local -a mkfs=(mkfs.btrfs -q -f)
    (($# > 1)) && mkfs+=(-d raid1 -m raid1)
    if ! "${mkfs[@]}" "$@" >"$RUN/err" 2>&1; then
        skip "$key" "mkfs.btrfs failed: $(tail -n1 "$RUN/err")"
        return 1
    fi
    mkdir -p "$m"
    local -a opts=()
    (($# > 1)) && opts=(-o "device=$2")
    if ! mount -t btrfs "${opts[@]}" "$1" "$m" 2>"$RUN/err"; then
        skip "$key" "mount -t btrfs failed: $(tail -n1 "$RUN/err")"
        return 1
    fi
    note_state mount "$m"
}

# new_btrfs KEY MOUNTPOINT NDEV IMAGE_PREFIX: a btrfs on NDEV new loop devices (raid1 when
# 2) mounted at MOUNTPOINT; returns 1 (after `skip`) when that cannot be done here.
new_btrfs() {
    local key=$1 m=$2 n=$3 prefix=$4 i dev
    local -a devs=()
    for ((i = 0; i < n; i++)); do
        dev=$(new_loop "$key" "$prefix.$i.img") || return 1
        devs+=("$dev")
    done
    btrfs_mount "$key" "$m" "${devs[@]}"
}

contender_raw() {
    CUR_KEY=raw
    CUR_ENGINE=raw
    CUR_MNT=$RUN/raw
    mkdir -p "$CUR_MNT"
    workloads raw "$CUR_MNT"
    rm -rf --one-file-system -- "$CUR_MNT" "$RECV_MNT"  # its space, for the next contenders
}

btrfs_contender() {  # btrfs_contender KEY NDEV
    local key=$1
    btrfs_ok "$key" || return 0
    CUR_KEY=$key
    CUR_ENGINE=btrfs
    CUR_NDEV=$2
    CUR_MNT=$RUN/$key
    new_btrfs "$key" "$CUR_MNT" "$CUR_NDEV" "$RUN/$key" || return 0
    workloads "$key" "$CUR_MNT"
}

contender_btrfs() { btrfs_contender btrfs 1; }
contender_btrfs-raid1() { btrfs_contender btrfs-raid1 2; }

# new_vdevs DIR N: N sparse backing files in DIR, into the array vdevs (a mirror when
# N > 1); the caller declares `local -a vdevs`.
new_vdevs() {
    local dir=$1 n=$2 i
    mkdir -p "$dir"
    vdevs=()
    for ((i = 0; i < n; i++)); do
        note_state file "$dir/v$i"
        truncate -s "$VDEV_SIZE" "$dir/v$i"
        vdevs+=("$dir/v$i")
    done
    ((n > 1)) && vdevs=(mirror "${vdevs[@]}")
    return 0
}

pool_name() {  # one name per run: zbench and the run directory's suffix
    local pool=zbench${RUN##*.}
    printf '%s\n' "${pool//[^A-Za-z0-9]/}"
}

# new_pool POOL MOUNTPOINT VDEV_DIR: a pool of CUR_NDEV new file vdevs in VDEV_DIR with
# CUR_COMP compression, its root filesystem at MOUNTPOINT, created by the current engine
# (zfs-fuse without a cache file; Zetta with the contender's own). The zpool error is in
# $RUN/err when it fails.
new_pool() {
    local pool=$1 m=$2 dir=$3
    local -a vdevs
    new_vdevs "$dir" "$CUR_NDEV"
    case $CUR_ENGINE in
        zfs-fuse)
            "$ZPOOL" create -f -o cachefile=none -O compression="$CUR_COMP" -m "$m" \
                "$pool" "${vdevs[@]}" >"$RUN/err" 2>&1 || return 1
            note_state pool "$pool"
            ;;
        zetta)
            zetta_cli "$CUR_CACHE" zpool create -f -O compression="$CUR_COMP" -m "$m" \
                "$pool" "${vdevs[@]}" >"$RUN/err" 2>&1 || return 1
            note_state zettapool "$pool $CUR_CACHE"
            ;;
    esac
}

# recv_target KEY: the receiving side of send | receive and cp -a, of the same contender
# and geometry: a second pool (RECV_POOL, root at RECV_MNT) in the same daemon, a second
# btrfs, or a second directory.
recv_target() {
    local key=$1
    RECV_MNT=$RUN/$key.recv
    case $CUR_ENGINE in
        zfs-fuse | zetta)
            RECV_POOL=$(pool_name)r
            new_pool "$RECV_POOL" "$RECV_MNT" "$RUN/vdevs.$key.recv" ||
                { log "$key: receiving pool: $(tail -n1 "$RUN/err")"; return 1; }
            wait_mounted "$RECV_MNT" || { log "$key: $RECV_MNT not mounted"; return 1; }
            ;;
        btrfs)
            new_btrfs "$key" "$RECV_MNT" "$CUR_NDEV" "$RUN/$key.recv" ||
                { log "$key: no receiving btrfs"; return 1; }
            ;;
        *) mkdir -p "$RECV_MNT" ;;
    esac
}

# zfs_fuse KEY COMPRESSION NVDEVS: a fresh daemon, a pool of file vdevs, one dataset.
zfs_fuse() {
    local key=$1 i pid other
    if [[ -z $ZFS_FUSE || -z $ZPOOL || -z $ZFS ]]; then
        skip "$key" "zfs-fuse binaries not found in package $ZFS_FUSE_PKG"
        return 0
    fi
    if [[ ! -c /dev/fuse ]]; then
        skip "$key" "no /dev/fuse (FUSE unavailable here)"
        return 0
    fi
    other=""
    for pid in $(pgrep -x zfs-fuse || true); do
        zfs_fuse_alive "$pid" && other+=" $pid"
    done
    if [[ -n $other ]]; then
        skip "$key" "a zfs-fuse daemon not started by this run (pid$other) holds $ZFS_SOCKET; stop it (service zfs-fuse stop) to include zfs-fuse"
        return 0
    fi
    # In its own session, so a Ctrl-C at the terminal does not reach it (it catches SIGINT
    # and aborts): the teardown destroys the pool first, then stops the daemon by its id.
    # (A background job of a non-interactive shell is no group leader: setsid does not fork.)
    setsid "$ZFS_FUSE" --no-daemon --no-kstat-mount >"$RUN/zfs-fuse.$key.log" 2>&1 </dev/null &
    pid=$!
    note_state zfsd "$pid"
    for ((i = 0; i < 100; i++)); do
        zfs_fuse_alive "$pid" && "$ZPOOL" list >/dev/null 2>&1 && break
        sleep 0.1
    done
    if ! zfs_fuse_alive "$pid" || ! "$ZPOOL" list >/dev/null 2>&1; then
        skip "$key" "zfs-fuse daemon did not start: $(tail -n1 "$RUN/zfs-fuse.$key.log")"
        return 0
    fi
    CUR_KEY=$key
    CUR_ENGINE=zfs-fuse
    CUR_COMP=$2
    CUR_NDEV=$3
    CUR_DAEMON=$pid
    CUR_VDEV_DIR=$RUN/vdevs.$key
    CUR_MNT=$RUN/$key
    CUR_POOL=$(pool_name)
    if ! new_pool "$CUR_POOL" "$CUR_MNT" "$CUR_VDEV_DIR"; then
        skip "$key" "zpool create (zfs-fuse) failed: $(tail -n1 "$RUN/err")"
        return 0
    fi
    if ! wait_mounted "$CUR_MNT"; then
        skip "$key" "zfs-fuse created the pool but $CUR_MNT is not mounted (FUSE mount failed)"
        return 0
    fi
    workloads "$key" "$CUR_MNT"
}

contender_zfs-fuse() { zfs_fuse zfs-fuse off 1; }
contender_zfs-fuse-comp() { zfs_fuse zfs-fuse-comp on 1; }
contender_zfs-fuse-mirror() { zfs_fuse zfs-fuse-mirror off 2; }

# zetta_contender KEY COMPRESSION NVDEVS: like zfs_fuse. A fresh daemon with its own cache
# file (and so its own socket, in CACHE.run) under the run directory, started in its own
# session as `zpool` would start it on demand; a pool of file vdevs whose root filesystem
# the daemon mounts.
zetta_contender() {
    local key=$1 i pid
    if [[ ! -x $ZETTA ]]; then
        skip "$key" "no $ZETTA (cargo build --release -p zetta-cli failed or no cargo)"
        return 0
    fi
    if [[ ! -c /dev/fuse ]]; then
        skip "$key" "no /dev/fuse (FUSE unavailable here)"
        return 0
    fi
    CUR_CACHE=$RUN/zetta.$key/zpool.cache
    mkdir -p "$RUN/zetta.$key"
    # Its volumes' /dev/zvol links under the run dir, not in the host's /dev/zvol.
    setsid env -u ZETTA_RUN_DIR -u ZETTA_DIRECT -u ZETTA_MOUNT ZETTA_CACHE_FILE="$CUR_CACHE" \
        ZETTA_ZVOL_DIR="$RUN/dev-zvol" "$ZETTA" daemon >"$RUN/zetta.$key.log" 2>&1 </dev/null &
    pid=$!
    note_state zettad "$pid $CUR_CACHE"
    # Wait for its socket before the first command: a command that finds no daemon
    # answering starts one of its own, which would race this one for the socket.
    # (Until setsid and env have exec'd it, the process is not yet called zetta.)
    for ((i = 0; i < 100; i++)); do
        [[ -S $CUR_CACHE.run/zetta.sock ]] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if ! daemon_alive "$pid" zetta || ! zetta_cli "$CUR_CACHE" zpool list >/dev/null 2>&1; then
        skip "$key" "zetta daemon did not start: $(tail -n1 "$RUN/zetta.$key.log")"
        return 0
    fi
    CUR_KEY=$key
    CUR_ENGINE=zetta
    CUR_COMP=$2
    CUR_NDEV=$3
    CUR_DAEMON=$pid
    CUR_VDEV_DIR=$RUN/vdevs.$key
    CUR_MNT=$RUN/$key
    CUR_POOL=$(pool_name)
    if ! new_pool "$CUR_POOL" "$CUR_MNT" "$CUR_VDEV_DIR"; then
        skip "$key" "zpool create (zetta) failed: $(tail -n1 "$RUN/err")"
        return 0
    fi
    if ! wait_mounted "$CUR_MNT"; then
        skip "$key" "zetta created the pool but $CUR_MNT is not mounted (FUSE mount failed;\
 daemon log: $(tail -n1 "$RUN/zetta.$key.log"))"
        return 0
    fi
    workloads "$key" "$CUR_MNT"
}

contender_zetta() { zetta_contender zetta off 1; }
contender_zetta-lz4() { zetta_contender zetta-lz4 lz4 1; }
contender_zetta-mirror() { zetta_contender zetta-mirror off 2; }
