#!/bin/bash
# FUSE request threads per mount, measured side by side: one zetta binary, one pool and
# daemon per thread count (ZETTA_FUSE_THREADS in the daemon's environment), measured
# alternately, each repetition cold (export, import, drop caches): 4 parallel `ls -lR` of
# 10 000 small files, and 16k random reads (fio, 4 jobs) of a 256 MiB file.
#
#   bash bench/workers_ab.sh ZETTA_BINARY [REPS] [COUNTS]     (root; /dev/fuse; fio)
#   COUNTS defaults to "2 4 8".
set -u
[[ $# -ge 1 ]] || { echo "usage: bash bench/workers_ab.sh ZETTA [REPS] [COUNTS]" >&2; exit 2; }
BIN=$(realpath "$1"); REPS=${2:-4}; COUNTS=${3:-"2 4 8"}; FILES=10000
B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
unset ZETTA_RUN_DIR ZETTA_DIRECT ZETTA_MOUNT
Z() { local n=$1; shift; ZETTA_FUSE_THREADS=$n ZETTA_CACHE_FILE=/var/tmp/wk-$n/zpool.cache "$BIN" "$@"; }
waitm() { for i in $(seq 1 300); do mountpoint -q "$1" && return 0; sleep 0.1; done; echo "not mounted $1"; return 1; }
for n in $COUNTS; do
  D=/var/tmp/wk-$n; rm -rf $D; mkdir -p $D/vdev $D/mnt; truncate -s 3G $D/vdev/d0
  Z $n zpool create -f -m $D/mnt wk$n $D/vdev/d0 || exit 1
  waitm $D/mnt || exit 1
  python3 $B/storm.py create $D/mnt/storm $FILES >/dev/null
  fio --name=w --filename=$D/mnt/seq.dat --bs=1M --size=256m --rw=write --end_fsync=1 --ioengine=psync --output-format=terse >/dev/null
done
cold() { local n=$1 D=/var/tmp/wk-$1; Z $n zpool export wk$n && Z $n zpool import -d $D/vdev wk$n && waitm $D/mnt; echo 3 >/proc/sys/vm/drop_caches; }
for r in $(seq 1 $REPS); do
  for n in $COUNTS; do
    cold $n
    s=$(date +%s.%N); ls -d /var/tmp/wk-$n/mnt/storm/d* | xargs -P4 -n1 ls -lR >/dev/null; e=$(date +%s.%N)
    echo "w$n ls-lR-x4 $r $(echo "$e - $s" | bc)"
  done
done
for r in $(seq 1 $REPS); do
  for n in $COUNTS; do
    cold $n
    fio --name=rr --filename=/var/tmp/wk-$n/mnt/seq.dat --rw=randread --readonly --bs=16k --ioengine=psync --direct=0 \
      --numjobs=4 --size=64m --offset_increment=64m --group_reporting --runtime=10 \
      --output-format=json --output=/tmp/wk-$n.json >/dev/null
    echo "w$n randread16k $r $(python3 $B/fio_mbps.py /tmp/wk-$n.json read)"
  done
done
for n in $COUNTS; do Z $n daemon --stop; rm -rf /var/tmp/wk-$n; done
