#!/usr/bin/env bash
# POSIX conformance: runs pjdfstest (the suite FreeBSD and Linux file system developers
# use; its Rust version) against a Zetta mount, and with --btrfs also against kernel btrfs
# on a loop device on this machine, the anchor the mount issue measures against.
#
#   bash scripts/pjdfstest.sh [--btrfs]
#
# Needs root (pjdfstest switches users; mounts). Installs pjdfstest with cargo and creates
# the users it needs (`tests`, `pjdfstest`). Prints each file system's summary line and
# exits 1 if any test fails on Zetta. Everything it creates is torn down.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)
log() { printf 'pjdfstest: %s\n' "$*"; }

with_btrfs=0
[ "${1:-}" = "--btrfs" ] && with_btrfs=1

if ! command -v cargo >/dev/null 2>&1; then
    export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
if ! command -v pjdfstest >/dev/null 2>&1; then
    log "cargo install pjdfstest"
    cargo install --quiet --locked pjdfstest --version 0.2.2
fi
for user in tests pjdfstest; do
    id "$user" >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$user"
done
[ -x target/release/zetta ] || cargo build --release -p zetta-cli

work=$(mktemp -d /tmp/zpjd.XXXXXX)
# pjdfstest acts as other users too: they must reach the suite directories.
chmod 0755 "$work"
loop=""
cleanup() {
    set +e
    if [ -n "$loop" ]; then
        umount "$work/btrfs" 2>/dev/null
        losetup -d "$loop" 2>/dev/null
    fi
    "$work/zpool" destroy -f pjd >/dev/null 2>&1
    "$repo/target/release/zetta" daemon --stop >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

export ZETTA_CACHE_FILE="$work/zpool.cache" ZETTA_RUN_DIR="$work/run"
unset ZETTA_DIRECT ZETTA_MOUNT
"$repo/target/release/zetta" install-links "$work" >/dev/null
# Features these file systems have (pjdfstest -l lists them).
cat > "$work/pjdfstest.toml" <<'EOF'
[features]
posix_fallocate = {}
rename_ctime = {}
utime_now = {}
utimensat = {}

[settings]
# Seconds between two changes whose timestamps must differ. Under the FUSE writeback
# cache the kernel stamps regular files' mtime and ctime with its coarse clock (one tick,
# 4 ms at HZ=250), as it does for OpenZFS's own ZPL: 0.01 s is more than a tick.
naptime = 0.01
allow_remount = false
EOF

run_suite() {
    # run_suite NAME DIR: runs the suite in DIR, keeps its output, prints the summary.
    local name=$1 dir=$2 out="$work/$1.out"
    (cd "$dir" && pjdfstest -c "$work/pjdfstest.toml" -p "$dir" >"$out" 2>&1) || true
    local summary
    summary=$(grep '^Summary' "$out" || echo "Summary: (no summary: the run aborted)")
    printf '%-8s %s\n' "$name" "$summary"
    grep -E ' FAILED$' "$out" | sed "s/^/$name failed: /" || true
}

truncate -s 1G "$work/disk"
"$work/zpool" create -m "$work/mnt" pjd "$work/disk"
mkdir -p "$work/mnt/suite"
zetta_summary=$(run_suite zetta "$work/mnt/suite")
printf '%s\n' "$zetta_summary"

if [ "$with_btrfs" -eq 1 ]; then
    command -v mkfs.btrfs >/dev/null 2>&1 || apt-get install -y -qq btrfs-progs >/dev/null
    truncate -s 1G "$work/btrfs.img"
    loop=$(losetup --find --show "$work/btrfs.img")
    mkfs.btrfs -q "$loop"
    mkdir -p "$work/btrfs"
    mount "$loop" "$work/btrfs"
    mkdir -p "$work/btrfs/suite"
    run_suite btrfs "$work/btrfs/suite"
fi

if printf '%s\n' "$zetta_summary" | grep -q '^zetta    Summary: 0 failed'; then
    exit 0
fi
log "pjdfstest found failures on Zetta"
exit 1
