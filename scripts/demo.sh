#!/usr/bin/env bash
# Zetta end to end: a mirrored pool on two sparse files, driven by the real `zpool` (the zetta
# binary through the links `zetta install-links` makes). It checks what an administrator would
# look at: the pool scrubs clean, survives one side of the mirror being overwritten with random
# data (scrub repairs it and counts the damage), exports and imports, grows to a three-way
# mirror and back, and is destroyed.
#
#   bash scripts/demo.sh
#
# Everything lives in a temporary directory (files, links, pool cache file) that is removed on
# exit; nothing touches a system ZFS. Each command is printed before it runs; the script exits
# non-zero as soon as a step fails or a check does not hold.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

pool=demo
device_size_mib=512
# Labels L0, L1 and the boot reserve take the first 4 MiB of a device, L2 and L3 the last
# 512 KiB (docs/ONDISK.md). The damage covers everything in between, with 1 MiB to spare.
damage_offset_mib=4
damage_size_mib=$((device_size_mib - damage_offset_mib - 1))

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold="" plain=""; fi
heading() { printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"; }
fail() { printf '\ndemo: FAILED: %s\n' "$*" >&2; exit 1; }

# Prints a command the way you would type it, with the demo directory shortened to $DEMO.
show() {
    local word line=""
    for word in "$@"; do
        word=${word//"$demo_dir"/\$DEMO}
        case "$word" in
            *[!A-Za-z0-9_./=:,@%+\$-]*) line+=" '$word'" ;;
            *) line+=" $word" ;;
        esac
    done
    printf '$%s\n' "$line"
}

# run COMMAND...: prints it, runs it, and stops the demo if it fails.
run() {
    show "$@"
    local status=0
    "$@" || status=$?
    [ "$status" -eq 0 ] || fail "'$*' exited with status $status"
}

# capture COMMAND...: like run, and keeps the output in $output for the checks that follow.
output=""
capture() {
    show "$@"
    local status=0
    output=$("$@" 2>&1) || status=$?
    printf '%s\n' "$output"
    [ "$status" -eq 0 ] || fail "'$*' exited with status $status"
}

check() {
    # check DESCRIPTION CONDITION...: evaluates the condition (a command) and reports it.
    local description=$1
    shift
    if "$@"; then
        printf '   ok: %s\n' "$description"
    else
        fail "$description"
    fi
}

output_has() { grep -qF -- "$1" <<<"$output"; }
output_lacks() { ! grep -qF -- "$1" <<<"$output"; }

# The `scan:` line of the last `zpool status`: "scrub repaired 1.50M in 00:00:01 with 0 errors".
scrub_repaired() { sed -n 's/.*scan: scrub repaired \([^ ]*\) in .*/\1/p' <<<"$output"; }
scrub_errors() { sed -n 's/.*scan: scrub repaired .* with \([0-9]*\) errors.*/\1/p' <<<"$output"; }
# A device's CKSUM column in the last `zpool status` (NAME STATE READ WRITE CKSUM).
device_cksum() { awk -v device="$1" '$1 == device { print $5; exit }' <<<"$output"; }

# Waits until the last scrub or resilver has finished, leaving its `zpool status` in $output.
wait_for_scan() {
    local waited_secs=0
    while output=$(zpool status "$pool" 2>&1) && grep -q 'in progress since' <<<"$output"; do
        [ "$waited_secs" -lt 600 ] || fail "the scan did not finish in 600 seconds"
        sleep 1
        waited_secs=$((waited_secs + 1))
    done
}

heading "Build (scripts/setup.sh installs what is missing, then cargo build --release)"
bash scripts/setup.sh
zetta_binary="${CARGO_TARGET_DIR:-$repo/target}/release/zetta"
[ -x "$zetta_binary" ] || fail "$zetta_binary was not built"

demo_dir=$(mktemp -d "${TMPDIR:-/tmp}/zetta-demo.XXXXXX")
disks="$demo_dir/disks"
pool_created=0
cleanup() {
    local status=$?
    if [ "$pool_created" -eq 1 ]; then
        zpool destroy -f "$pool" >/dev/null 2>&1 || true
    fi
    # The daemon the demo's commands started (one per cache file) goes with the demo.
    if [ -n "${zetta_binary:-}" ] && [ -x "$zetta_binary" ]; then
        "$zetta_binary" daemon --stop >/dev/null 2>&1 || true
    fi
    rm -rf "$demo_dir"
    if [ "$status" -eq 0 ]; then
        printf '\ndemo: all steps passed\n'
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

heading "Put zpool and zfs links first on PATH (\$DEMO is $demo_dir)"
mkdir -p "$demo_dir/bin" "$disks"
run "$zetta_binary" install-links "$demo_dir/bin"
export PATH="$demo_dir/bin:$PATH"
# The pool cache (the list of imported pools that every zpool command opens) stays in $DEMO.
export ZETTA_CACHE_FILE="$demo_dir/zpool.cache"
show export ZETTA_CACHE_FILE="$ZETTA_CACHE_FILE"
[ "$(command -v zpool)" = "$demo_dir/bin/zpool" ] || fail "zpool on PATH is $(command -v zpool), not ours"

heading "Three sparse ${device_size_mib} MiB files as devices"
run truncate -s "${device_size_mib}M" "$disks/f1" "$disks/f2" "$disks/f3"
run chmod 600 "$disks/f1" "$disks/f2" "$disks/f3"   # a vdev holds every byte: keep it private
run ls -ls "$disks"

heading "Create a two-way mirror"
run zpool create -m "$demo_dir/mnt" "$pool" mirror "$disks/f1" "$disks/f2"
pool_created=1
capture zpool status "$pool"
check "the pool is ONLINE" output_has "state: ONLINE"
check "both sides of the mirror are listed" output_has "$disks/f2"
capture zpool list -v "$pool"
check "zpool list shows the pool" output_has "$pool"

heading "A filesystem, mounted: copy a real tree into it with ordinary programs"
run zfs create -o compression=lz4 "$pool/docs"
capture zfs list -r "$pool"
check "the filesystem is mounted" grep -qF " $demo_dir/mnt/docs fuse.zetta " /proc/self/mounts
run cp -a /usr/share/doc "$demo_dir/mnt/docs/doc"
tree_digest() { (cd "$1" && tar --sort=name --numeric-owner -cf - . | md5sum | cut -d' ' -f1); }
original_digest=$(tree_digest /usr/share/doc)
check "the copy is identical, metadata included (tar digest $original_digest)" \
    test "$(tree_digest "$demo_dir/mnt/docs/doc")" = "$original_digest"
run zfs snapshot "$pool/docs@copied"
run rm -rf "$demo_dir/mnt/docs/doc/adduser"
check "the snapshot still has what was deleted" test -d "$demo_dir/mnt/docs/.zfs/snapshot/copied/doc/adduser"
run zfs rollback "$pool/docs@copied"
check "rollback brings it back" test "$(tree_digest "$demo_dir/mnt/docs/doc")" = "$original_digest"
capture zfs list -t all -r "$pool"

heading "Scrub a fresh pool: nothing to repair"
run zpool scrub "$pool"
wait_for_scan
capture zpool status "$pool"
check "scrub repaired 0B" test "$(scrub_repaired)" = "0B"
check "scrub found 0 errors" test "$(scrub_errors)" = "0"

heading "Overwrite one side of the mirror with random data (past the first ${damage_offset_mib} MiB)"
run dd if=/dev/urandom of="$disks/f1" bs=1M seek="$damage_offset_mib" count="$damage_size_mib" \
    conv=notrunc status=none

heading "Scrub again: the damaged copies are rewritten from the good side"
run zpool scrub "$pool"
wait_for_scan
capture zpool status "$pool"
repaired=$(scrub_repaired)
check "scrub repaired something (${repaired:-nothing})" test -n "$repaired" -a "$repaired" != "0B"
check "no data was lost (0 errors)" test "$(scrub_errors)" = "0"
check "no known data errors" output_has "errors: No known data errors"
f1_cksum=$(device_cksum "$disks/f1")
f2_cksum=$(device_cksum "$disks/f2")
check "the damaged side counts checksum errors (CKSUM ${f1_cksum:-?})" \
    test -n "$f1_cksum" -a "$f1_cksum" != "0"
check "the intact side counts none (CKSUM ${f2_cksum:-?})" test "$f2_cksum" = "0"
check "the files read back intact" test "$(tree_digest "$demo_dir/mnt/docs/doc")" = "$original_digest"

heading "Export, list what can be imported, import"
run zpool export "$pool"
pool_created=0
capture zpool import -d "$disks"
check "the exported pool is importable" output_has "$pool"
run zpool import -d "$disks" "$pool"
pool_created=1
capture zpool status "$pool"
check "the imported pool is ONLINE" output_has "state: ONLINE"
check "the filesystem is mounted again, its files intact" \
    test "$(tree_digest "$demo_dir/mnt/docs/doc")" = "$original_digest"

heading "Scrub after import: the repairs were written for good"
run zpool scrub "$pool"
wait_for_scan
capture zpool status "$pool"
check "scrub repaired 0B" test "$(scrub_repaired)" = "0B"

heading "Attach a third device (a three-way mirror, resilvered) and detach it"
run zpool attach "$pool" "$disks/f1" "$disks/f3"
wait_for_scan
capture zpool status "$pool"
check "the new device is in the mirror" output_has "$disks/f3"
check "the pool is ONLINE" output_has "state: ONLINE"
run zpool detach "$pool" "$disks/f3"
capture zpool status "$pool"
check "the device is gone" output_lacks "$disks/f3"
capture zpool list -v "$pool"

heading "Destroy"
run zpool destroy "$pool"
pool_created=0
capture zpool list
check "no pool is left" output_lacks "$pool "
