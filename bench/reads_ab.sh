#!/bin/bash
# Paired read probe: two zetta binaries' pools side by side, measured alternately, each
# repetition cold (export, import, drop caches): a cold `ls -lR` of 10 000 small files, the
# same with 4 parallel `ls -lR`, and 16k random reads (fio, 4 jobs) of a 256 MiB file.
#
#   bash bench/reads_ab.sh BEFORE_BINARY AFTER_BINARY [REPS]     (root; /dev/fuse; fio)
#
# READS_AB_SNAPSHOT=1 reads the same trees through `.zfs/snapshot/ab` instead (a snapshot
# taken after they are written).
set -u
[[ $# -ge 2 ]] || { echo "usage: bash bench/reads_ab.sh BEFORE AFTER [REPS]" >&2; exit 2; }
REPS=${3:-5}; FILES=10000
B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
unset ZETTA_RUN_DIR ZETTA_DIRECT ZETTA_MOUNT
declare -A BIN=([before]=$(realpath "$1") [after]=$(realpath "$2"))
Z() { local tag=$1; shift; ZETTA_CACHE_FILE=/var/tmp/rb2-$tag/zpool.cache "${BIN[$tag]}" "$@"; }
waitm() { for i in $(seq 1 300); do mountpoint -q "$1" && return 0; sleep 0.1; done; echo "not mounted $1"; return 1; }
for tag in before after; do
  D=/var/tmp/rb2-$tag; rm -rf $D; mkdir -p $D/vdev $D/mnt; truncate -s 3G $D/vdev/d0
  Z $tag zpool create -f -m $D/mnt r2$tag $D/vdev/d0 || exit 1
  waitm $D/mnt || exit 1
  python3 $B/storm.py create $D/mnt/storm $FILES >/dev/null
  fio --name=w --filename=$D/mnt/seq.dat --bs=1M --size=256m --rw=write --end_fsync=1 --ioengine=psync --output-format=terse >/dev/null
  [[ ${READS_AB_SNAPSHOT:-0} = 1 ]] && { Z $tag zfs snapshot r2$tag@ab || exit 1; }
done
# Where the probes read: the live tree, or the snapshot of it.
R() { if [[ ${READS_AB_SNAPSHOT:-0} = 1 ]]; then echo /var/tmp/rb2-$1/mnt/.zfs/snapshot/ab; else echo /var/tmp/rb2-$1/mnt; fi; }
cold() { local tag=$1 D=/var/tmp/rb2-$1; Z $tag zpool export r2$tag && Z $tag zpool import -d $D/vdev r2$tag && waitm $D/mnt; echo 3 >/proc/sys/vm/drop_caches; }
for r in $(seq 1 $REPS); do
  for tag in before after; do
    cold $tag
    s=$(date +%s.%N); ls -lR $(R $tag)/storm >/dev/null; e=$(date +%s.%N)
    echo "$tag ls-lR $r $(echo "$e - $s" | bc)"
  done
done
for r in $(seq 1 $REPS); do
  for tag in before after; do
    cold $tag
    s=$(date +%s.%N); ls -d $(R $tag)/storm/d* | xargs -P4 -n1 ls -lR >/dev/null; e=$(date +%s.%N)
    echo "$tag ls-lR-x4 $r $(echo "$e - $s" | bc)"
  done
done
for r in $(seq 1 $REPS); do
  for tag in before after; do
    cold $tag
    fio --name=rr --filename=$(R $tag)/seq.dat --rw=randread --readonly --bs=16k --ioengine=psync --direct=0 \
      --numjobs=4 --size=64m --offset_increment=64m --group_reporting --runtime=15 \
      --output-format=json --output=/tmp/rb2-$tag.json >/dev/null
    echo "$tag randread16k $r $(python3 $B/fio_mbps.py /tmp/rb2-$tag.json read)"
  done
done
for tag in before after; do Z $tag daemon --stop; rm -rf /var/tmp/rb2-$tag; done
