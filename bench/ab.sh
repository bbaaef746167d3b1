#!/usr/bin/env bash
# Paired probes: the same workload on two zetta binaries, alternately, in one run, so a
# change is measured against the binary before it on the same noisy machine (ratios within
# a pair, never absolute figures across runs). Root, /dev/fuse and fio needed.
#
#   bash bench/ab.sh OLD_BIN NEW_BIN [PROBE...] [--rounds N] [--dir DIR]
#
# Probes (default: all):
#   seqwrite   fio 1M sequential write of 1 GiB into a fresh mount, end_fsync (MB/s)
#   randwrite  the seeds' 16-job 4k sync random writers, 16 x 64 MiB, capped at 20 s (MB/s)
#   sendrecv   zfs send | zfs receive of 1 GiB incompressible between two pools of one
#              daemon, cold (MiB/s); zfs-fuse's figure for the same is `--zfs-fuse`
#   vmimage    dd bs=1M conv=fsync of a 256 MiB VM-image-like file (bench/corpus.py), warm
#              source, compression off (MiB/s)
#   scrub      zpool scrub of 1 GiB incompressible, cold (MiB/s to "scrub repaired")
#   storm      10 000 small files created (files/s), then `ls -lR` cold (files/s)
#   deletes    10 000 small files made, then unlinked cold, with their directories (files/s)
#   zvolflush  a guest's synchronous 4k writes to a volume over NBD: qemu-img bench, one
#              write then one FLUSH, 3000 times (writes/s); needs qemu-utils
#
# Each probe builds its pool from scratch on sparse files under DIR (default /var/tmp/ab)
# with its own daemon and cache file, and tears everything down after.
set -uo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OLD=${1:?old binary}
NEW=${2:?new binary}
shift 2
PROBES=()
ROUNDS=2
DIR=/var/tmp/ab
while (($#)); do
    case $1 in
        --rounds) ROUNDS=$2; shift 2 ;;
        --dir) DIR=$2; shift 2 ;;
        *) PROBES+=("$1"); shift ;;
    esac
done
((${#PROBES[@]})) || PROBES=(seqwrite randwrite sendrecv vmimage scrub storm)
mkdir -p "$DIR"
DATA=$DIR/random.dat
[[ -f $DATA ]] || head -c 1G /dev/urandom >"$DATA"
if [[ ! -f $DIR/vm.img ]]; then
    python3 "$BENCH/corpus.py" text "$DIR/text.tar" 64 >/dev/null
    python3 "$BENCH/corpus.py" vmimage "$DIR/vm.img" 256 "$DIR/text.tar" >/dev/null
fi

rate() { python3 -c "import sys; print(round(float(sys.argv[1]) / (float(sys.argv[3]) - float(sys.argv[2])), 1))" "$@"; }
now() { date +%s.%N; }

# up BIN TAG: a daemon with its own cache file; sets D, Z (the command), PID.
up() {
    D=$DIR/$2
    if mountpoint -q "$D/m" 2>/dev/null; then
        echo "a previous run is still mounted under $D" >&2
        return 1
    fi
    rm -rf "$D" && mkdir -p "$D/m" "$D/m2"
    export ZETTA_CACHE_FILE=$D/zpool.cache
    Z=$1
    setsid "$Z" daemon >"$D/log" 2>&1 </dev/null &
    for _ in $(seq 100); do "$Z" zpool list >/dev/null 2>&1 && break; sleep 0.1; done
    PID=$(pgrep -n -f "$Z daemon")
}

down() {
    local pool
    for pool in $("$Z" zpool list -H -o name 2>/dev/null); do "$Z" zpool destroy "$pool"; done
    "$Z" daemon --stop >/dev/null 2>&1 || kill "$PID"
    unset ZETTA_CACHE_FILE
    rm -rf "$D"
}

pool() {  # pool NAME MOUNTPOINT SIZE
    truncate -s "$3" "$D/$1.img"
    "$Z" zpool create -f -O compression=off -m "$2" "$1" "$D/$1.img"
    for _ in $(seq 100); do mountpoint -q "$2" && break; sleep 0.1; done
}

fill() {  # fill DIR: 1 GiB of the incompressible data in 8 files, each fsynced
    local i
    for i in 0 1 2 3 4 5 6 7; do
        dd if="$DATA" of="$1/f$i" bs=1M skip=$((i * 128)) count=128 conv=fsync status=none
    done
}

probe_seqwrite() {
    pool w "$D/m" 8G
    fio --name=sw --filename="$D/m/seq" --rw=write --bs=1M --size=1g --end_fsync=1 \
        --ioengine=psync --output-format=json --output="$D/fio.json" >/dev/null
    python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['jobs'][0]['write']['bw'] / 1024, 1))" "$D/fio.json"
}

probe_randwrite() {
    pool w "$D/m" 8G
    fio --name=rw --directory="$D/m" --ioengine=sync --iodepth=4 --rw=randwrite --bs=4k \
        --direct=0 --size=64m --numjobs=16 --end_fsync=1 --group_reporting --runtime=20 \
        --output-format=json --output="$D/fio.json" >/dev/null
    python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['jobs'][0]['write']['bw'] / 1024, 1))" "$D/fio.json"
}

probe_sendrecv() {
    pool s "$D/m" 4G
    pool d "$D/m2" 4G
    "$Z" zfs create s/send
    fill "$D/m/send"
    "$Z" zfs snapshot s/send@s1
    "$Z" zpool export s && "$Z" zpool import -d "$D" s
    echo 3 >/proc/sys/vm/drop_caches
    local t0 t1
    t0=$(now)
    "$Z" zfs send s/send@s1 | "$Z" zfs receive -F d/send
    t1=$(now)
    rate 1024 "$t0" "$t1"
}

probe_vmimage() {
    pool v "$D/m" 3G
    cat "$DIR/vm.img" >/dev/null
    local t0 t1
    t0=$(now)
    dd if="$DIR/vm.img" of="$D/m/vm" bs=1M conv=fsync status=none
    t1=$(now)
    rate 256 "$t0" "$t1"
}

probe_scrub() {
    pool r "$D/m" 4G
    fill "$D/m"
    "$Z" zpool export r && "$Z" zpool import -d "$D" r
    echo 3 >/proc/sys/vm/drop_caches
    local t0 t1
    t0=$(now)
    "$Z" zpool scrub r
    until "$Z" zpool status r | grep -q "scrub repaired"; do sleep 0.05; done
    t1=$(now)
    rate 1024 "$t0" "$t1"
}

probe_storm() {
    pool t "$D/m" 4G
    local create ls
    create=$(python3 "$BENCH/storm.py" create "$D/m" 10000)
    "$Z" zpool export t && "$Z" zpool import -d "$D" t
    echo 3 >/proc/sys/vm/drop_caches
    ls=$(python3 "$BENCH/storm.py" cmd "$D/m" 10000 -- ls -lR "$D/m")
    echo "$create create, $ls ls-lR"
}

probe_deletes() {
    pool t "$D/m" 4G
    python3 "$BENCH/storm.py" create "$D/m/s" 10000 >/dev/null
    "$Z" zpool export t && "$Z" zpool import -d "$D" t
    echo 3 >/proc/sys/vm/drop_caches
    python3 "$BENCH/storm.py" delete "$D/m/s" 10000
}

probe_zvolflush() {
    pool w "$D/m" 2G
    "$Z" zfs create -V 256M w/vol
    local sock=$ZETTA_CACHE_FILE.run/nbd/w/vol
    for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
    local t0 t1
    t0=$(now)
    qemu-img bench -w -f raw -t none -c 3000 -s 4k -d 1 --flush-interval=1 \
        "nbd+unix:///w/vol?socket=$sock" >/dev/null
    t1=$(now)
    rate 3000 "$t0" "$t1"
}

printf '| probe | round | old | new |\n|---|---|---|---|\n'
for probe in "${PROBES[@]}"; do
    for ((round = 1; round <= ROUNDS; round++)); do
        up "$OLD" old || exit 1
        old=$("probe_$probe" 2>>"$DIR/errors")
        down
        up "$NEW" new || exit 1
        new=$("probe_$probe" 2>>"$DIR/errors")
        down
        printf '| %s | %d | %s | %s |\n' "$probe" "$round" "$old" "$new"
    done
done
