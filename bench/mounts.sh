#!/bin/bash
# bench/mounts.sh — the daemon's memory and mount costs (issue 16's memory benchmark).
#
#   sudo bash bench/mounts.sh                       # 500 datasets in one pool, both phases
#   sudo DATASETS=100 POOLS=4 bash bench/mounts.sh  # other shapes
#   sudo PHASES=mounts bash bench/mounts.sh         # only the mount phase (or: writers)
#   sudo ZETTA=/path/to/zetta bash bench/mounts.sh  # another build (A/B of two branches)
#
# Phase "mounts" (docs/PERFORMANCE.md, "Many pools and mounts"): POOLS pools on sparse files
# and DATASETS filesystems spread over them, created unmounted (`zfs create -u`), then timed:
# `zfs mount -a` (every filesystem), `zfs list` of them all, a 64 KiB file written and read
# back in every mount, `zfs unmount -a`, and `zfs mount -a` again. The daemon's peak RSS
# (VmHWM) and its thread count (sampled every 0.2 s, the peak kept) after each step.
#
# Phase "writers": a daemon of its own (the mounts phase's pools exported, its daemon
# stopped), zfs_arc_max set to ARC_MAX (1 GiB unless "default"), one pool; the seeds' 4k
# random writers (fio, 8 jobs of 64 MiB, sync engine, end_fsync) and then a 1 MiB
# sequential write of SEQ_MIB with
# end_fsync, the daemon's peak RSS reset before each (/proc/PID/clear_refs 5) and read after,
# set against the daemon's ARC maximum (`zetta arcstats` c_max: zfs_arc_max, or its default)
# + zfs_dirty_data_max ($ZETTA_RUN_DIR/parameters).
#
# Every figure is printed as `name value` lines on stdout (a report that diffs), with a
# Markdown table at the end. Environment variables the daemon reads (ZETTA_CONF, and any
# a build adds, e.g. a worker-pool size) pass through to it: the daemon is started by the
# first command, with this script's environment. Everything lives under a fresh
# /var/tmp/zetta-mounts.XXXX (WORK overrides the parent directory) and is torn down at exit:
# the pools destroyed, the daemon stopped with its own cache file and then by its pid.
set -u

REPO=$(cd "$(dirname "$0")/.." && pwd)
ZETTA=${ZETTA:-${CARGO_TARGET_DIR:-$REPO/target}/release/zetta}
POOLS=${POOLS:-1}
DATASETS=${DATASETS:-500}
PHASES=${PHASES:-mounts,writers}
SEQ_MIB=${SEQ_MIB:-1024}
RW_SIZE=${RW_SIZE:-64m}
RW_JOBS=${RW_JOBS:-8}
WORK=${WORK:-/var/tmp}
# The writers phase's zfs_arc_max (bytes; `zetta tunable`), so that the bound it is held
# against means something: the default is all memory but 1 GiB. "default" keeps it.
ARC_MAX=${ARC_MAX:-1073741824}

[[ -x $ZETTA ]] || { echo "no zetta binary at $ZETTA (cargo build --release)" >&2; exit 1; }
LAB=$(mktemp -d "$WORK/zetta-mounts.XXXX")
BIN=$LAB/zetta
cp "$ZETTA" "$BIN"
mkdir -p "$LAB/mnt" "$LAB/run"
export ZETTA_CACHE_FILE=$LAB/zpool.cache ZETTA_RUN_DIR=$LAB/run ZETTA_ZVOL_DIR=$LAB/zvol
unset ZETTA_DIRECT ZETTA_MOUNT

SAMPLER=
daemon_pid() { cat "$LAB/run/zetta.pid" 2>/dev/null; }
teardown() {
    [[ -n $SAMPLER ]] && kill "$SAMPLER" 2>/dev/null
    local pid
    pid=$(daemon_pid)
    for p in $("$BIN" zpool list -Ho name 2>/dev/null); do "$BIN" zpool destroy -f "$p" >/dev/null 2>&1; done
    "$BIN" daemon --stop >/dev/null 2>&1
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
        sleep 2
        kill "$pid" 2>/dev/null
    fi
    rm -rf "$LAB"
}
trap teardown EXIT

# now_s: seconds since the epoch with milliseconds.
now_s() { date +%s.%N | cut -c1-14; }
# timed NAME CMD...: runs CMD, prints `NAME seconds`; a failure ends the run.
timed() {
    local name=$1 t0 t1
    shift
    t0=$(now_s)
    "$@" >/dev/null 2>"$LAB/err" || { echo "FAILED: $*: $(head -5 "$LAB/err")" >&2; exit 1; }
    t1=$(now_s)
    printf '%s %.2f\n' "$name" "$(echo "$t1 - $t0" | bc)"
}
status_kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$(daemon_pid)/status"; }
# The sampler keeps the peak thread count in $LAB/threads.peak until killed.
start_sampler() {
    echo 0 > "$LAB/threads.peak"
    (
        peak=0
        while sleep 0.2; do
            n=$(awk '$1 == "Threads:" {print $2}' "/proc/$(daemon_pid)/status" 2>/dev/null)
            [[ -n $n ]] && ((n > peak)) && { peak=$n; echo "$peak" > "$LAB/threads.peak"; }
        done
    ) &
    SAMPLER=$!
}
report_memory() {
    local step=$1
    echo "${step}_peak_rss_mib $(( $(status_kb VmHWM) / 1024 ))"
    echo "${step}_rss_mib $(( $(status_kb VmRSS) / 1024 ))"
    echo "${step}_threads $(status_kb Threads)"
    echo "${step}_threads_peak $(cat "$LAB/threads.peak")"
}
param() { cat "$LAB/run/parameters/$1" 2>/dev/null || echo 0; }

echo "commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null) binary $ZETTA"
echo "date $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) cores $(nproc)"
echo "memory_mib $(( $(awk '$1 == "MemTotal:" {print $2}' /proc/meminfo) / 1024 ))"
declare -A ROW

if [[ $PHASES == *mounts* ]]; then
    for p in $(seq 0 $((POOLS - 1))); do
        truncate -s 1G "$LAB/d$p"
        "$BIN" zpool create -f -m "$LAB/mnt/p$p" "bm$p" "$LAB/d$p" >/dev/null ||
            { echo "zpool create failed" >&2; exit 1; }
    done
    start_sampler
    report_memory pools
    ROW[pools_rss]=$(( $(status_kb VmHWM) / 1024 ))
    timed create_unmounted_s bash -c "for d in \$(seq 0 $((DATASETS - 1))); do
        '$BIN' zfs create -u bm\$((d % $POOLS))/fs\$d || exit 1; done"
    timed mount_all_s "$BIN" zfs mount -a
    mounted=$(awk '$3 == "fuse.zetta"' /proc/mounts | grep -c " $LAB/")
    echo "mounted $mounted"
    timed list_all_s "$BIN" zfs list -H -o name,used,mountpoint
    report_memory mounted
    ROW[mounted]=$mounted
    ROW[mounted_rss]=$(( $(status_kb VmHWM) / 1024 ))
    ROW[mounted_threads]=$(status_kb Threads)
    timed write_read_all_s bash -c "for m in \$(awk '\$3 == \"fuse.zetta\" {print \$2}' /proc/mounts | grep '^$LAB/'); do
        head -c 65536 /dev/urandom > \$m/file && cat \$m/file > /dev/null || exit 1; done"
    timed sync_s "$BIN" zpool sync
    report_memory used
    ROW[used_rss]=$(( $(status_kb VmHWM) / 1024 ))
    ROW[threads_peak]=$(cat "$LAB/threads.peak")
    timed unmount_all_s "$BIN" zfs unmount -a
    echo "mounted_after_unmount $(awk '$3 == "fuse.zetta"' /proc/mounts | grep -c " $LAB/")"
    report_memory unmounted
    timed remount_all_s "$BIN" zfs mount -a
    report_memory remounted
    per_mount_kib=$(( ( ROW[mounted_rss] - ROW[pools_rss] ) * 1024 / (mounted > 0 ? mounted : 1) ))
    echo "rss_per_mount_kib $per_mount_kib"
    ROW[per_mount]=$per_mount_kib
fi

if [[ $PHASES == *writers* ]]; then
    if [[ $PHASES == *mounts* ]]; then
        # A daemon of its own: the mounts phase's pools exported, the daemon stopped.
        for p in $(seq 0 $((POOLS - 1))); do "$BIN" zpool export "bm$p" >/dev/null 2>&1; done
        pid=$(daemon_pid)
        "$BIN" daemon --stop >/dev/null 2>&1
        while [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
        kill "$SAMPLER" 2>/dev/null
        SAMPLER=
    fi
    truncate -s 8G "$LAB/w.img"
    "$BIN" zpool create -f -O compression=off -m "$LAB/mnt/w" bmw "$LAB/w.img" >/dev/null ||
        { echo "zpool create bmw failed" >&2; exit 1; }
    [[ -n $SAMPLER ]] || start_sampler
    if [[ $ARC_MAX != default ]]; then
        "$BIN" tunable "zfs_arc_max=$ARC_MAX" >/dev/null || { echo "zetta tunable zfs_arc_max=$ARC_MAX failed" >&2; exit 1; }
    fi
    # zfs_arc_max 0 is "the default": the ARC's effective maximum is arcstats' c_max.
    arc_max=$("$BIN" arcstats | awk '$1 == "c_max" {print $3}')
    [[ -n $arc_max ]] || arc_max=$(param zfs_arc_max)
    dirty_max=$(param zfs_dirty_data_max)
    echo "zfs_arc_max_mib $((arc_max >> 20))"
    echo "zfs_dirty_data_max_mib $((dirty_max >> 20))"
    bound=$(( (arc_max + dirty_max) >> 20 ))
    echo "arc_max_plus_dirty_max_mib $bound"
    echo 5 > "/proc/$(daemon_pid)/clear_refs"
    timed randwrite_4k_s fio --name=random-writers --directory="$LAB/mnt/w" --ioengine=sync \
        --iodepth=4 --rw=randwrite --bs=4k --direct=0 --size="$RW_SIZE" --numjobs="$RW_JOBS" \
        --end_fsync=1 --group_reporting
    report_memory randwrite
    ROW[randwrite_rss]=$(( $(status_kb VmHWM) / 1024 ))
    rm -f "$LAB/mnt/w"/random-writers.*
    "$BIN" zpool sync bmw >/dev/null
    echo 5 > "/proc/$(daemon_pid)/clear_refs"
    timed seqwrite_s fio --name=seq --filename="$LAB/mnt/w/seq" --rw=write --bs=1M \
        --size="${SEQ_MIB}m" --end_fsync=1 --ioengine=psync
    report_memory seqwrite
    ROW[seqwrite_rss]=$(( $(status_kb VmHWM) / 1024 ))
    ROW[bound]=$bound
fi

echo
echo "| mounts | peak RSS pools only | peak RSS mounted | per mount | threads mounted (peak) | 4k writers peak RSS | seq write peak RSS | arc_max + dirty_max |"
echo "|---|---|---|---|---|---|---|---|"
echo "| ${ROW[mounted]:--} | ${ROW[pools_rss]:--} MiB | ${ROW[used_rss]:--} MiB | ${ROW[per_mount]:--} KiB | ${ROW[mounted_threads]:--} (${ROW[threads_peak]:--}) | ${ROW[randwrite_rss]:--} MiB | ${ROW[seqwrite_rss]:--} MiB | ${ROW[bound]:--} MiB |"
