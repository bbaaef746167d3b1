#!/usr/bin/env bash
# The seed post "ZVOL vs QCOW2 with KVM" (shared/seeds, 000-002 and 004) again, in spirit,
# side by side in one run: fio random 4k and 64k writes, a sync after each (`--fsync=1`,
# and `--end_fsync=1` as the post), on
#   zvol-dev      a Zetta volume through /dev/zvol (loop device over the daemon's FUSE file)
#   zvol-nbd      the same volume over the daemon's NBD socket (fio's nbd engine)
#   qcow2-64k     a qcow2 file (default 64K clusters) on a Zetta filesystem, served by
#                 `qemu-nbd -k SOCKET` (this kernel has no nbd driver: no /dev/nbd0, so fio's
#                 nbd engine is the guest), writeback cache: a FLUSH fsyncs the file
#   qcow2-8k      the post's tuned file: `-o cluster_size=8K`
#   host-raw      a plain file on the host filesystem (psync, O_DIRECT)
#   host-qcow2    a qcow2 file on the host filesystem through qemu-nbd
# The pool is the post's: ashift=13, recordsize=8K, atime=off, compression=lz4, and the
# volume has volblocksize=8K. No VM: the post's guest ran fio inside a KVM guest on ext4;
# here fio is the guest's block layer. Figures are MB/s (10^6 B/s); the post's are
# printed beside them (its run: 16 jobs x 256m, `--ioengine=sync --end_fsync=1`, no
# per-write fsync, so only the ratios between rows compare).
#
#   sudo bash bench/zvol_qcow2.sh [--quick] [--dir DIR] [--no-doc]
#
# Writes its table into docs/SEEDS.md between the "zvol_qcow2" markers (unless --no-doc).
# Everything it sets up (daemon, pool, qemu-nbd processes, files) is torn down on exit.
# Durability is not measured here: the tests assert it (crates/cli/tests/nbd.rs
# `nbd_acknowledged_writes_survive_sigkill`, zvol_dev.rs `dev_zvol_synced_writes_survive_sigkill`).
set -euo pipefail
export LC_ALL=C

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$BENCH")
MODE=full
DIR=/var/tmp/zetta-bench
WRITE_DOC=1
while (($#)); do
    case $1 in
        --quick) MODE=quick ;;
        --dir) DIR=${2:?--dir needs a directory}; shift ;;
        --no-doc) WRITE_DOC=0 ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
        *) echo "usage: bash bench/zvol_qcow2.sh [--quick] [--dir DIR] [--no-doc]" >&2; exit 2 ;;
    esac
    shift
done
if [[ $MODE == quick ]]; then
    SIZE=32m CAP=15 VOL=256M
else
    SIZE=256m CAP=60 VOL=2G
fi

log() { printf '%s\n' "$*" >&2; }
die() { log "zvol_qcow2.sh: $*"; exit 1; }
[[ $(id -u) -eq 0 ]] || die "run as root (loop devices, FUSE mounts)"
for tool in fio qemu-img qemu-nbd losetup python3; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh installs it)"
done
fio --enghelp 2>/dev/null | grep -qx '[[:space:]]*nbd' || die "this fio has no nbd engine"

TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
[[ $TARGET_DIR == /* ]] || TARGET_DIR=$REPO/$TARGET_DIR
[[ -x $TARGET_DIR/release/zetta ]] || die "no $TARGET_DIR/release/zetta (cargo build --release -p zetta-cli)"

mkdir -p "$DIR"
RUN=$(mktemp -d "$DIR/zvol_qcow2.XXXXXX")
mkdir "$RUN/bin"
cp "$TARGET_DIR/release/zetta" "$RUN/bin/zetta"  # others may rebuild target/ meanwhile
ZETTA=$RUN/bin/zetta
CACHE=$RUN/zpool.cache
export ZETTA_CACHE_FILE=$CACHE ZETTA_ZVOL_DIR=$RUN/dev/zvol
unset ZETTA_RUN_DIR ZETTA_DIRECT ZETTA_MOUNT
DAEMON=""
QEMU_PIDS=()
RESULTS=$RUN/results.tsv  # row <TAB> bs <TAB> MB/s
: >"$RESULTS"

zc() { "$ZETTA" "$@"; }

cleanup() {
    local rc=$? pid i
    trap - EXIT
    for pid in "${QEMU_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    if [[ -n $DAEMON ]]; then
        zc zpool destroy -f zq >/dev/null 2>&1 || true
        timeout 60 "$ZETTA" daemon --stop >/dev/null 2>&1 || true
        for ((i = 0; i < 50; i++)); do
            kill -0 "$DAEMON" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$DAEMON" 2>/dev/null || true
    fi
    if ! awk -v p="$RUN/" 'index($2, p) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
        rm -rf --one-file-system "$RUN"
    else
        log "cleanup: still mounted under $RUN, leaving it"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One fio run: ROW BS fio-target-options...
measure() {
    local row=$1 bs=$2 out=$RUN/fio.json
    shift 2
    fio --output-format=json --output="$out" --name="$row" --rw=randwrite --bs="$bs" \
        --size="$SIZE" --fsync=1 --end_fsync=1 --runtime="$CAP" --randrepeat=0 "$@" >/dev/null
    printf '%s\t%s\t%s\n' "$row" "$bs" "$(python3 "$BENCH/fio_mbps.py" "$out" write)" >>"$RESULTS"
    log "  $row $bs: $(tail -n1 "$RESULTS" | cut -f3) MB/s"
}

# qemu-nbd serving FILE (qcow2) on SOCKET, writeback cache (a client FLUSH is an fsync).
serve_qcow2() {
    local file=$1 sock=$2 i
    qemu-nbd --persistent --shared=4 -k "$sock" -f qcow2 --cache=writeback "$file" \
        >/dev/null 2>&1 &
    QEMU_PIDS+=($!)
    for ((i = 0; i < 100; i++)); do
        [[ -S $sock ]] && return 0
        sleep 0.1
    done
    die "qemu-nbd did not start on $sock"
}

# Both block sizes on one NBD URI.
measure_nbd() {
    local row=$1 uri=$2 bs
    for bs in 4k 64k; do
        measure "$row" "$bs" --ioengine=nbd --uri="$uri"
    done
}

LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
log "zvol_qcow2: run directory $RUN ($MODE: $SIZE per run, capped at ${CAP}s)"
setsid "$ZETTA" daemon >"$RUN/daemon.log" 2>&1 </dev/null &
DAEMON=$!
for ((i = 0; i < 100; i++)); do
    [[ -S $CACHE.run/zetta.sock ]] && break
    sleep 0.1
done
truncate -s 8G "$RUN/vdev"
zc zpool create -f -o ashift=13 -O recordsize=8K -O atime=off -O compression=lz4 \
    -m "$RUN/zq" zq "$RUN/vdev"
zc zfs create -V "$VOL" -b 8K zq/vm
zc zfs create zq/images
DEV=$ZETTA_ZVOL_DIR/zq/vm
for ((i = 0; i < 200; i++)); do
    [[ -b $DEV ]] && break
    sleep 0.1
done
[[ -b $DEV ]] || die "$DEV did not appear (daemon log: $(tail -n1 "$RUN/daemon.log"))"

log "=== zvol-dev"
for bs in 4k 64k; do
    measure zvol-dev "$bs" --filename="$DEV" --ioengine=psync --direct=1
done
log "=== zvol-nbd"
measure_nbd zvol-nbd "nbd+unix:///zq/vm?socket=$CACHE.run/nbd/zq/vm"

for cluster in 64k 8k; do
    log "=== qcow2-$cluster"
    file=$RUN/zq/images/vm-$cluster.qcow2
    qemu-img create -q -f qcow2 -o cluster_size="$cluster" "$file" "$VOL"
    serve_qcow2 "$file" "$RUN/qcow2-$cluster.sock"
    measure_nbd "qcow2-$cluster" "nbd+unix:///?socket=$RUN/qcow2-$cluster.sock"
done

log "=== host-raw"
truncate -s "$VOL" "$RUN/host.raw"
for bs in 4k 64k; do
    measure host-raw "$bs" --filename="$RUN/host.raw" --ioengine=psync --direct=1
done
log "=== host-qcow2"
qemu-img create -q -f qcow2 "$RUN/host.qcow2" "$VOL"
serve_qcow2 "$RUN/host.qcow2" "$RUN/host-qcow2.sock"
measure_nbd host-qcow2 "nbd+unix:///?socket=$RUN/host-qcow2.sock"

section=$(python3 - "$RESULTS" "$MODE" "$SIZE" "$CAP" "$VOL" "$STARTED" "$COMMIT" "$LOAD" \
    "$(nproc)" <<'EOF'
import sys
results, mode, size, cap, vol, started, commit, load, nproc = sys.argv[1:]
rates = {}
for line in open(results, encoding="utf-8"):
    row, bs, mbps = line.rstrip("\n").split("\t")
    rates[(row, bs)] = float(mbps)
# The post's figures (4k, 16 jobs, --ioengine=sync --end_fsync=1, inside a KVM guest).
post = {"zvol-dev": 50.5, "qcow2-64k": 45.8, "qcow2-8k": 170.0}
label = {
    "zvol-dev": "zvol, /dev/zvol",
    "zvol-nbd": "zvol over NBD",
    "qcow2-64k": "qcow2 (64K clusters) on a dataset",
    "qcow2-8k": "qcow2 (8K clusters) on a dataset",
    "host-raw": "raw file on the host",
    "host-qcow2": "qcow2 on the host",
}
zvol4 = rates.get(("zvol-dev", "4k"))
print(f"fio random writes, `--fsync=1 --end_fsync=1`, one job, {size} per run capped at "
      f"{cap} s; pool ashift=13, recordsize=8K, lz4, atime=off; volume {vol}, "
      f"volblocksize=8K (`bash bench/zvol_qcow2.sh{' --quick' if mode == 'quick' else ''}`)."
      " MB/s; x zvol = this row's 4k over the zvol's 4k.")
print()
print(f"Last run: {started}, commit {commit}, {nproc} cores, load average at start {load}"
      " (a shared machine: read the ratios, not the MB/s).")
print()
print("| storage | 4k MB/s | 64k MB/s | 4k x zvol | post 4k MB/s | post x zvol |")
print("|---|---|---|---|---|---|")
for row in label:
    r4, r64 = rates.get((row, "4k")), rates.get((row, "64k"))
    fmt = lambda v: "—" if v is None else f"{v:.1f}"
    ratio = "—" if r4 is None or not zvol4 else f"{r4 / zvol4:.2f}"
    p = post.get(row)
    pr = "—" if p is None else f"{p / post['zvol-dev']:.2f}"
    print(f"| {label[row]} | {fmt(r4)} | {fmt(r64)} | {ratio} | {fmt(p)} | {pr} |")
EOF
)
printf '%s\n' "$section"
if ((WRITE_DOC)); then
    python3 - "$REPO/docs/SEEDS.md" "$section" <<'EOF'
import sys
path, section = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
begin, end = "<!-- zvol_qcow2 begin -->", "<!-- zvol_qcow2 end -->"
if begin not in text or end not in text:
    sys.exit(f"{path}: no {begin} ... {end} markers")
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(path, "w", encoding="utf-8").write(f"{head}{begin}\n{section}\n{end}{tail}")
EOF
    log "docs/SEEDS.md updated"
fi
