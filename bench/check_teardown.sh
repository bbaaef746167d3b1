#!/usr/bin/env bash
# Checks that bench/run.sh leaves nothing behind when it is interrupted or a contender fails.
#
#   bash bench/check_teardown.sh int  [PATTERN [LIST]]   # Ctrl-C once PATTERN is logged
#   bash bench/check_teardown.sh kill [PATTERN [LIST]]   # kill -9 the contender's daemon
#
# Runs `bench/run.sh --quick --no-doc --only LIST` in its own process group with its own work
# directory, waits until its log shows PATTERN (a line of the harness's progress, e.g.
# "zetta sendrecv_mbps" while both pools are there), then either sends SIGINT to the whole
# group, as a terminal's Ctrl-C does (the run must stop with status 130), or kills the
# zetta/zfs-fuse daemon it started with SIGKILL (the run must mark that contender failed and
# go on). Either way it then checks, as root, that nothing is left: no mount, loop device,
# daemon or file of the run. Exit status 0 when clean; the findings are printed otherwise.
# No timing is asserted: the waits are for events, bounded only to avoid hanging forever.
set -euo pipefail
export LC_ALL=C

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODE=${1:?usage: check_teardown.sh int|kill [PATTERN [LIST]]}
PATTERN=${2:-zetta sendrecv_mbps}
LIST=${3:-raw,zetta}
WAIT_SECS_MAX=1800

[[ $MODE == int || $MODE == kill ]] || { echo "mode is int or kill" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "run as root" >&2; exit 2; }

WORK=$(mktemp -d /var/tmp/zetta-teardown.XXXXXX)
LOG=$WORK.log
DIR=$WORK/bench
zfs_fuse_before=$(pgrep -x zfs-fuse || true)

# The daemons of this run that have not exited (a zombie only waits for init to reap it
# once run.sh, its parent, is gone): a zetta whose environment names a cache file under
# WORK (other engineers' tests may run their own), or a zfs-fuse that was not there before.
running() { [[ $(awk '/^State:/ { print $2 }' 2>/dev/null "/proc/$1/status") == [RSDTI] ]]; }
run_daemons() {
    local pid
    for pid in $(pgrep -x zetta || true); do
        running "$pid" || continue
        tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -q "^ZETTA_CACHE_FILE=$WORK/" &&
            echo "$pid"
    done
    for pid in $(pgrep -x zfs-fuse || true); do
        running "$pid" || continue
        grep -qx "$pid" <<<"$zfs_fuse_before" || echo "$pid"
    done
}

# With job control on, the run is its own process group, as a terminal's foreground job
# is, and gets SIGINT as the default action (a plain background job of a script starts
# with SIGINT ignored, and then run.sh could not trap it).
set -m
bash "$BENCH/run.sh" --quick --no-doc --only "$LIST" --dir "$DIR" \
    >"$WORK.out" 2>"$LOG" </dev/null &
RUN_PID=$!
set +m

stop_run() { kill -INT -- "-$RUN_PID" 2>/dev/null || true; }
trap stop_run EXIT

found=0
for ((i = 0; i < WAIT_SECS_MAX * 5; i++)); do
    if [[ -f $LOG ]] && grep -qF -- "$PATTERN" "$LOG"; then
        found=1
        break
    fi
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.2
done
if ((!found)); then
    echo "check_teardown: '$PATTERN' never appeared in the log ($LOG)" >&2
    exit 1
fi

if [[ $MODE == int ]]; then
    echo "check_teardown: '$PATTERN' seen; sending SIGINT to process group $RUN_PID"
    kill -INT -- "-$RUN_PID"
else
    victim=""
    for pid in $(run_daemons); do  # the daemon, not a zetta CLI client of the moment
        if [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") == *" daemon "* ||
            $(cat 2>/dev/null "/proc/$pid/comm") == zfs-fuse ]]; then
            victim=$pid
        fi
    done
    [[ -n $victim ]] || { echo "check_teardown: no daemon of this run to kill" >&2; exit 1; }
    echo "check_teardown: '$PATTERN' seen; kill -9 $(cat "/proc/$victim/comm") $victim"
    kill -KILL "$victim"
fi
trap - EXIT
rc=0
wait "$RUN_PID" || rc=$?
echo "check_teardown: run.sh exited with status $rc"

problems=()
if [[ $MODE == int ]]; then
    ((rc == 130)) || problems+=("exit status $rc, expected 130 after SIGINT")
else
    ((rc == 0)) || problems+=("exit status $rc, expected 0 (a failed contender is reported, not fatal)")
    grep -q 'FAILED' "$LOG" || problems+=("no contender reported FAILED after its daemon was killed")
fi
mounts=$(awk -v p="$WORK/" 'index($2, p) == 1 { print $2 }' /proc/mounts)
[[ -z $mounts ]] || problems+=("still mounted: $mounts")
loops=$(losetup -a | grep -F "$WORK/" || true)
[[ -z $loops ]] || problems+=("loop devices left: $loops")
daemons=$(run_daemons)
[[ -z $daemons ]] || problems+=("daemons left: $daemons")
left=$(find "$DIR" -mindepth 1 -print -quit 2>/dev/null || true)
[[ -z $left ]] || problems+=("files left under $DIR, e.g. $left")

if ((${#problems[@]})); then
    printf 'check_teardown: NOT CLEAN: %s\n' "${problems[@]}" >&2
    echo "check_teardown: the run's log is $LOG" >&2
    exit 1
fi
rm -rf "$WORK" "$WORK.out" "$LOG"
echo "check_teardown: clean"
