# shellcheck shell=bash
# Sourced by bench/run.sh: what is measured on each contender, and the helpers it needs.
#
# `workloads KEY MOUNTPOINT` runs every workload, in order, on the contender that
# contenders.sh has just set up, which leaves these set:
#   CUR_ENGINE    raw, btrfs, zfs-fuse or zetta: which commands snapshot, scrub and send
#   CUR_MNT       the measured filesystem's mountpoint
#   CUR_NDEV      how many backing devices (1, or 2 for a mirror / raid1)
#   CUR_COMP      zfs-fuse and zetta: the pool's compression (for the receiving pool too)
#   CUR_POOL      zfs-fuse and zetta: the pool, exported and imported to empty its ARC
#   CUR_VDEV_DIR  zfs-fuse and zetta: the directory of its backing files (import -d)
#   CUR_DAEMON    zfs-fuse and zetta: the daemon's pid, for the peak RSS
#   CUR_CACHE     zetta: the cache file naming its daemon
# Each figure goes to $RESULTS as "contender <TAB> metric <TAB> value" through `result`
# (report.py knows the metrics); a workload that makes no sense on a contender (raw has no
# snapshots) records why with `skip_workload`. Any command that fails fails the contender.

DROP_CACHES=yes
CUR_KEY=""           # the contender's key, for notes
CUR_ENGINE=""
CUR_MNT=""
CUR_NDEV=1
CUR_COMP=off
CUR_POOL=""
CUR_VDEV_DIR=""
CUR_DAEMON=""
CUR_CACHE=""
RECV_MNT=""          # the receiving filesystem of send | receive and cp -a (contenders.sh)
RECV_POOL=""         # zfs-fuse and zetta: the receiving pool
DATA_DIR=""          # the scrubbed and sent dataset's mountpoint
CORPUS=""            # the source files, on the host filesystem (make_corpus)
SCRUB_POLL_SECS=0.05
SCRUB_WAIT_SECS_MAX=1800

result() {  # result KEY METRIC NUMBER
    [[ $3 =~ ^[0-9]+(\.[0-9]+)?$ ]] || { log "$1 $2: not a number: '$3'"; return 1; }
    printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$RESULTS"
    log "  $1 $2: $3 (at ${SECONDS}s)"
}
skip() {  # the whole contender cannot run here
    printf '%s\tskip\t%s\n' "$1" "$2" >>"$RESULTS"
    log "$1: skipped: $2"
}
skip_workload() {  # skip_workload KEY WORKLOAD REASON: one workload makes no sense here
    printf '%s\tskip:%s\t%s\n' "$1" "$2" "$3" >>"$RESULTS"
    log "  $1 $2: skipped ($3)"
}
note() {  # note TEXT: something the reader of the figures should know, for the report
    printf '%s\tnote\t%s\n' "$CUR_KEY" "$1" >>"$RESULTS"
    log "  $CUR_KEY: note: $1"
}

# timed VAR COMMAND...: run COMMAND in this shell and set VAR to its wall time in
# microseconds.
timed() {
    local timed_var=$1 timed_start_us timed_end_us
    shift
    timed_start_us=${EPOCHREALTIME//[!0-9]/}
    "$@"
    timed_end_us=${EPOCHREALTIME//[!0-9]/}
    printf -v "$timed_var" '%d' $((timed_end_us - timed_start_us))
}
mb_per_sec() {  # mb_per_sec BYTES MICROSECONDS (bytes per microsecond are MB/s)
    awk -v b="$1" -v us="$2" 'BEGIN { printf "%.1f", b / (us > 0 ? us : 1) }'
}
ms_of() {  # ms_of MICROSECONDS
    awk -v us="$1" 'BEGIN { printf "%.1f", us / 1000 }'
}
mib_bytes() { echo $(($1 * 1048576)); }

# The current contender's zpool and zfs: zfs-fuse's by absolute path, or Zetta's with its
# cache file.
cur_zpool() {
    case $CUR_ENGINE in
        zfs-fuse) "$ZPOOL" "$@" ;;
        zetta) zetta_cli "$CUR_CACHE" zpool "$@" ;;
        *) die "cur_zpool: no pool in contender ($CUR_ENGINE)" ;;
    esac
}
cur_zfs() {
    case $CUR_ENGINE in
        zfs-fuse) "$ZFS" "$@" ;;
        zetta) zetta_cli "$CUR_CACHE" zfs "$@" ;;
        *) die "cur_zfs: no pool in contender ($CUR_ENGINE)" ;;
    esac
}

# destroy_dataset NAME: zfs destroy -f (it unmounts first), tried again for a few seconds:
# zfs-fuse can find a filesystem busy just after it was read.
destroy_dataset() {
    local i
    for ((i = 0; i < 10; i++)); do
        cur_zfs destroy -f "$1" 2>"$RUN/err" && return 0
        sleep 0.5
    done
    log "$CUR_ENGINE: zfs destroy -f $1: $(tail -n1 "$RUN/err")"
    return 1
}

wait_mounted() {
    local i
    for ((i = 0; i < 50; i++)); do
        mountpoint -q "$1" && return 0
        sleep 0.1
    done
    return 1
}

# export_pool: zpool export, tried again for a few seconds when it fails (once, Zetta found
# its root filesystem busy with nothing of the harness running); the first refusal is
# noted in the report with whoever holds the mount.
export_pool() {
    local i holders
    for ((i = 0; i < 10; i++)); do
        cur_zpool export "$CUR_POOL" 2>"$RUN/err" && return 0
        if ((i == 0)); then
            holders=$(fuser -vm "$CUR_MNT" 2>&1 | tr -s ' \n' ' ' || true)
            note "zpool export refused ($(tail -n1 "$RUN/err")), tried again; fuser -vm: ${holders:-nothing}"
        fi
        sleep 0.5
    done
    log "$CUR_ENGINE: zpool export $CUR_POOL: $(tail -n1 "$RUN/err")"
    return 1
}

# drop_caches [MOUNTPOINT...]: empty the page cache and, for a pool, its ARC by exporting
# and importing it (which also commits everything); then wait for the pool's root and the
# given child filesystems to be mounted again. Only the contender is flushed first (btrfs:
# syncfs, whose commit flushes the loop device and so fsyncs its backing file; a pool: the
# export), never the whole host with `sync`: on a shared machine that waits for everyone
# else's dirty files. Every workload fsyncs what it writes, so the raw directory has
# nothing dirty to flush, and echo 3 drops clean pages only.
drop_caches() {
    local m
    [[ $CUR_ENGINE == btrfs ]] && sync -f "$CUR_MNT"
    if [[ -n $CUR_POOL ]]; then
        export_pool
        cur_zpool import -d "$CUR_VDEV_DIR" "$CUR_POOL"
        for m in "$CUR_MNT" "$@"; do
            wait_mounted "$m" ||
                { log "$CUR_ENGINE: $m not mounted after import"; return 1; }
        done
    fi
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
}

# fio_run JSON_OUT fio-options...: run fio quietly, its JSON report into a file.
fio_run() {
    local out=$1
    shift
    fio --output-format=json --output="$out" "$@" >/dev/null
}

# ---------------------------------------------------------------- the sequence

workloads() {
    local key=$1 m=$2
    if [[ $WORKLOADS == volume ]]; then
        volume_workload "$key" "$m"
        return 0
    fi
    snapshot_time "$key" empty
    seq_write "$key" "$m"
    drop_caches
    snapshot_time "$key" seq          # the sequential file is there, committed
    seq_and_random_read "$key" "$m"
    random_write "$key" "$m"
    storm_create "$key" "$m"
    drop_caches
    snapshot_time "$key" files        # the storm's files are there, committed
    storm_rest "$key" "$m"
    corpus_writes "$key" "$m"
    scrub_and_send "$key" "$m"
    volume_workload "$key" "$m"
    if [[ -n $CUR_DAEMON ]]; then     # last: VmHWM is the peak over every workload above
        result "$key" rss_mib "$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' \
            "/proc/$CUR_DAEMON/status")"
    fi
}

# ---------------------------------------------------------------- fio and the file storm

# Volumes: a block device of VOL_SIZE on each contender, written by fio with O_DIRECT: 4k
# random writes (one job, capped at CAP seconds) and a 1M sequential write of the whole
# device, each ending with an fsync of the device. raw: a loop device over a file in the
# raw directory (the host file a VM image would be); btrfs: a loop device over a file on
# the btrfs (a VM image on btrfs, copy-on-write as it comes); zetta: a volume (`zfs
# create -V`) through its /dev/zvol device (a loop device over the daemon's FUSE file);
# zfs-fuse: skipped (it serves no zvol block devices).
volume_workload() {
    local key=$1 m=$2 out=$RUN/fio.json dev="" i
    case $CUR_ENGINE in
        raw|btrfs)
            truncate -s "$VOL_SIZE" "$m/volume.img"
            dev=$(losetup --find --show --direct-io=on "$m/volume.img")
            note_state loop "$dev"
            ;;
        zetta)
            cur_zfs create -V "$VOL_SIZE" "$CUR_POOL/volume"
            dev=$RUN/dev-zvol/$CUR_POOL/volume
            for ((i = 0; i < 200; i++)); do
                [[ -b $dev ]] && break
                sleep 0.1
            done
            [[ -b $dev ]] || { log "zetta: $dev did not appear"; return 1; }
            ;;
        *)
            skip_workload "$key" volume "zfs-fuse serves no zvol block devices"
            return 0
            ;;
    esac
    fio_run "$out" --name=vol-randwrite --filename="$dev" --rw=randwrite --bs=4k \
        --ioengine=psync --direct=1 --size="$VOL_SIZE" --runtime="$CAP" --end_fsync=1
    result "$key" vol_randwrite_4k "$(python3 "$BENCH/fio_mbps.py" "$out" write)"
    fio_run "$out" --name=vol-seqwrite --filename="$dev" --rw=write --bs=1M \
        --ioengine=psync --direct=1 --size="$VOL_SIZE" --end_fsync=1
    result "$key" vol_seqwrite_1m "$(python3 "$BENCH/fio_mbps.py" "$out" write)"
    case $CUR_ENGINE in
        raw|btrfs) losetup -d "$dev"; rm -f "$m/volume.img" ;;
        zetta) destroy_dataset "$CUR_POOL/volume" ;;
    esac
}

seq_args() {
    printf '%s\n' --filename="$1/seq.dat" --bs=1M --size="${SEQ_MIB}m" --ioengine=psync \
        --direct=0
}

seq_write() {
    local key=$1 m=$2 out=$RUN/fio.json
    local -a seq
    mapfile -t seq < <(seq_args "$m")
    fio_run "$out" --name=seqwrite --rw=write --end_fsync=1 "${seq[@]}"
    result "$key" seq_write "$(python3 "$BENCH/fio_mbps.py" "$out" write)"
}

# Cold sequential read of seq.dat, then every 16k block of it read once, cold: each job
# reads its own part in random order. The file is deleted afterwards.
seq_and_random_read() {
    local key=$1 m=$2 out=$RUN/fio.json part=$((SEQ_MIB / RR_JOBS))m
    local -a seq
    mapfile -t seq < <(seq_args "$m")
    fio_run "$out" --name=seqread --rw=read --readonly "${seq[@]}"
    result "$key" seq_read "$(python3 "$BENCH/fio_mbps.py" "$out" read)"
    drop_caches
    fio_run "$out" --name=randread16k --filename="$m/seq.dat" --rw=randread --readonly \
        --bs=16k --ioengine=psync --direct=0 --numjobs="$RR_JOBS" --size="$part" \
        --offset_increment="$part" --group_reporting --runtime="$CAP"
    result "$key" randread_16k "$(python3 "$BENCH/fio_mbps.py" "$out" read)"
    rm -f "$m/seq.dat"
}

# The seeds' benchmark of record (sizes scaled in --quick), runtime capped.
random_write() {
    local key=$1 m=$2 out=$RUN/fio.json
    fio_run "$out" --name=random-writers --directory="$m" --ioengine=sync --iodepth=4 \
        --rw=randwrite --bs=4k --direct=0 --size="$RW_SIZE" --numjobs="$RW_JOBS" \
        --end_fsync=1 --group_reporting --runtime="$CAP"
    result "$key" randwrite_4k "$(python3 "$BENCH/fio_mbps.py" "$out" write)"
    rm -f "$m"/random-writers.*
}

storm_create() {
    result "$1" create "$(python3 "$BENCH/storm.py" create "$2/storm" "$FILES")"
}

# `ls -lR` (cold: after storm_create's drop_caches), `find` and stat (warm), delete.
storm_rest() {
    local key=$1 s=$2/storm
    result "$key" ls_lR "$(python3 "$BENCH/storm.py" cmd "$s" "$FILES" -- ls -lR "$s")"
    result "$key" find "$(python3 "$BENCH/storm.py" cmd "$s" "$FILES" -- find "$s")"
    result "$key" stat "$(python3 "$BENCH/storm.py" stat "$s" "$FILES")"
    result "$key" delete "$(python3 "$BENCH/storm.py" delete "$s" "$FILES")"
}

# ---------------------------------------------------------------- snapshots

# The measured filesystem's snapshot NAME: `zfs snapshot POOL@NAME`, or for btrfs a
# read-only snapshot of the mounted top-level subvolume at MOUNTPOINT/.snap-NAME.
snapshot_create() {
    case $CUR_ENGINE in
        zfs-fuse | zetta) cur_zfs snapshot "$CUR_POOL@$1" ;;
        btrfs) btrfs subvolume snapshot -r "$CUR_MNT" "$CUR_MNT/.snap-$1" >/dev/null ;;
    esac
}
snapshot_destroy() {
    case $CUR_ENGINE in
        zfs-fuse | zetta) cur_zfs destroy "$CUR_POOL@$1" ;;
        btrfs) btrfs subvolume delete "$CUR_MNT/.snap-$1" >/dev/null ;;
    esac
}

# snapshot_time KEY LABEL: the median time of SNAPSHOT_REPEATS snapshots of the measured
# filesystem as it is now (the callers commit it first, so the snapshot does not also
# write out dirty data), as metric snap_LABEL_ms. The snapshots are destroyed afterwards.
snapshot_time() {
    local key=$1 label=$2 i us
    local -a times_us=()
    if [[ $CUR_ENGINE == raw ]]; then
        [[ $label == empty ]] && skip_workload "$key" snapshot "a plain directory has no snapshots"
        return 0
    fi
    for ((i = 1; i <= SNAPSHOT_REPEATS; i++)); do
        timed us snapshot_create "$label$i"
        times_us+=("$us")
    done
    for ((i = 1; i <= SNAPSHOT_REPEATS; i++)); do
        snapshot_destroy "$label$i"
    done
    # btrfs cleans deleted subvolumes in the background: wait, so that it neither competes
    # with the next workload nor shrinks the space used under the corpus' measurement.
    # `filesystem sync` commits and wakes the cleaner, which otherwise sleeps until the
    # next periodic commit (30 s).
    if [[ $CUR_ENGINE == btrfs ]]; then
        btrfs filesystem sync "$CUR_MNT"
        btrfs subvolume sync "$CUR_MNT" >/dev/null
    fi
    us=$(printf '%s\n' "${times_us[@]}" | sort -n | sed -n "$(((SNAPSHOT_REPEATS + 1) / 2))p")
    result "$key" "snap_${label}_ms" "$(ms_of "$us")"
}

# ---------------------------------------------------------------- compressible corpus

# The run's source files, on the host filesystem beside the contenders' backing files:
# random.dat (the scrubbed and sent dataset), text.tar and vm.img (the corpus).
make_corpus() {
    CORPUS=$RUN/corpus
    mkdir -p "$CORPUS"
    log "making the corpus in $CORPUS"
    info data_corpus "$(python3 "$BENCH/corpus.py" random "$CORPUS/random.dat" "$DATA_MIB")"
    info text_corpus "$(python3 "$BENCH/corpus.py" text "$CORPUS/text.tar" "$TEXT_MIB")"
    info vm_corpus "$(python3 "$BENCH/corpus.py" vmimage "$CORPUS/vm.img" "$VM_MIB" \
        "$CORPUS/text.tar")"
    sync -- "$CORPUS"/*  # fsync: cold reads of random.dat must come from the disk
}

# corpus_dir KIND: make the directory that KIND (text or vm) is written into, and print
# it (so anything else goes to stderr): a child dataset POOL/cKIND (the pool's
# compression), or for btrfs a directory with `btrfs property set DIR compression lzo`.
corpus_dir() {
    local d=$CUR_MNT/c$1
    case $CUR_ENGINE in
        zfs-fuse | zetta)
            cur_zfs create "$CUR_POOL/c$1" >&2
            wait_mounted "$d" || { log "$CUR_ENGINE: $d not mounted after zfs create"; return 1; }
            ;;
        btrfs)
            mkdir "$d"
            btrfs property set "$d" compression lzo >&2
            ;;
        *) mkdir "$d" ;;
    esac
    printf '%s\n' "$d"
}

btrfs_data_used_bytes() {  # the Data line's used= of `btrfs filesystem df -b`
    btrfs filesystem df -b "$1" | awk -F'used=' '/^Data/ { print $2 + 0 }'
}

# corpus_write KEY KIND SOURCE: copy SOURCE (warm in the page cache) into a new file with
# dd, 1M blocks, fsync at the end; metric KIND_mbps. For btrfs, also KIND_space_ratio:
# the file's size over the growth of the Data space used.
corpus_write() {
    local key=$1 kind=$2 src=$3 d bytes us used_before used_after
    bytes=$(stat -c %s "$src")
    d=$(corpus_dir "$kind")
    cat "$src" >/dev/null
    if [[ $CUR_ENGINE == btrfs ]]; then
        sync -f "$CUR_MNT"
        used_before=$(btrfs_data_used_bytes "$CUR_MNT")
    fi
    timed us dd if="$src" of="$d/$kind" bs=1M conv=fsync status=none
    result "$key" "${kind}_mbps" "$(mb_per_sec "$bytes" "$us")"
    if [[ $CUR_ENGINE == btrfs ]]; then
        sync -f "$CUR_MNT"
        used_after=$(btrfs_data_used_bytes "$CUR_MNT")
        result "$key" "${kind}_space_ratio" \
            "$(awk -v b="$bytes" -v u="$((used_after - used_before))" \
                'BEGIN { printf "%.2f", (u > 0 ? b / u : 0) }')"
    fi
}

# Write the text tar and the VM image; then (for a pool, once it is committed) the space
# ratio of each: file size over the child dataset's `used`, and the `compressratio` the
# engine reports.
corpus_writes() {
    local key=$1 kind bytes used ratio
    corpus_write "$key" text "$CORPUS/text.tar"
    corpus_write "$key" vm "$CORPUS/vm.img"
    case $CUR_ENGINE in
        zfs-fuse | zetta)
            drop_caches "$CUR_MNT/ctext" "$CUR_MNT/cvm"
            for kind in text vm; do
                bytes=$(stat -c %s "$CUR_MNT/c$kind/$kind")
                used=$(cur_zfs get -Hp -o value used "$CUR_POOL/c$kind")
                result "$key" "${kind}_space_ratio" \
                    "$(awk -v b="$bytes" -v u="$used" 'BEGIN { printf "%.2f", b / u }')"
                ratio=$(cur_zfs get -H -o value compressratio "$CUR_POOL/c$kind")
                result "$key" "${kind}_compressratio" "${ratio%x}"
                destroy_dataset "$CUR_POOL/c$kind"
            done
            ;;
        *)
            [[ $CUR_ENGINE == raw ]] &&
                skip_workload "$key" compression "a plain directory does not compress"
            rm -rf -- "$CUR_MNT/ctext" "$CUR_MNT/cvm"
            ;;
    esac
}

# ---------------------------------------------------------------- scrub, send | receive

# The dataset that is scrubbed and sent: a child dataset POOL/send, a btrfs subvolume, or
# a directory, filled with DATA_FILES files of random.dat's bytes, fsynced.
make_data() {
    local i per=$((DATA_MIB / DATA_FILES))
    DATA_DIR=$CUR_MNT/send
    case $CUR_ENGINE in
        zfs-fuse | zetta)
            cur_zfs create "$CUR_POOL/send"
            wait_mounted "$DATA_DIR" ||
                { log "$CUR_ENGINE: $DATA_DIR not mounted after zfs create"; return 1; }
            ;;
        btrfs) btrfs subvolume create "$DATA_DIR" >/dev/null ;;
        *) mkdir "$DATA_DIR" ;;
    esac
    for ((i = 0; i < DATA_FILES; i++)); do
        dd if="$CORPUS/random.dat" of="$DATA_DIR/f$i" bs=1M skip=$((i * per)) count="$per" \
            status=none
    done
    sync -- "$DATA_DIR"/f*
}

data_snapshot() {  # data_snapshot NAME: POOL/send@NAME, or btrfs's read-only send.NAME
    case $CUR_ENGINE in
        zfs-fuse | zetta) cur_zfs snapshot "$CUR_POOL/send@$1" ;;
        btrfs) btrfs subvolume snapshot -r "$DATA_DIR" "$CUR_MNT/send.$1" >/dev/null ;;
    esac
}

# zpool scrub, then poll zpool status until it reports the scrub finished: "scrub
# repaired ... with N errors" (Zetta, OpenZFS) or "scrub completed ... with N errors"
# (zfs-fuse). The pool has had no earlier scrub, so a finished one is this one.
zfs_scrub_wait() {
    local status i polls
    polls=$(awk -v w="$SCRUB_WAIT_SECS_MAX" -v p="$SCRUB_POLL_SECS" 'BEGIN { printf "%d", w / p }')
    cur_zpool scrub "$CUR_POOL"
    for ((i = 0; i < polls; i++)); do
        status=$(cur_zpool status "$CUR_POOL")
        case $status in
            *"scrub in progress"*) ;;
            *"scrub repaired"* | *"scrub completed"*)
                [[ $status == *" with 0 errors"* ]] ||
                    log "$CUR_ENGINE: the scrub of $CUR_POOL reports errors: $(grep scrub <<<"$status")"
                return 0
                ;;
        esac
        sleep "$SCRUB_POLL_SECS"
    done
    log "$CUR_ENGINE: the scrub of $CUR_POOL did not finish in $SCRUB_WAIT_SECS_MAX s"
    return 1
}

# host_read_us VAR: the time to read random.dat, the dataset's bytes on the host
# filesystem, cold with dd: the raw read bandwidth to hold the scrub against.
host_read_us() {
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
    timed "$1" dd if="$CORPUS/random.dat" of=/dev/null bs=1M status=none
}

# Scrub the pool holding the dataset (cold), metric scrub_mbps: the dataset's bytes over
# the scrub's time. The host read of the same bytes just before and just after it gives
# read_mbps (both reads' bytes over both times: the disk of this minute, as the host's
# cache in front of it swings).
scrub_time() {
    local key=$1 us bytes read_before_us read_after_us
    bytes=$(mib_bytes "$DATA_MIB")
    host_read_us read_before_us
    case $CUR_ENGINE in
        zfs-fuse | zetta)
            drop_caches "$DATA_DIR"
            timed us zfs_scrub_wait
            ;;
        btrfs)
            drop_caches
            timed us btrfs scrub start -B -q "$CUR_MNT"
            ;;
        *) skip_workload "$key" scrub "a plain directory has no scrub" ;;
    esac
    [[ $CUR_ENGINE == raw ]] || result "$key" scrub_mbps "$(mb_per_sec "$bytes" "$us")"
    host_read_us read_after_us
    result "$key" read_mbps "$(mb_per_sec $((2 * bytes)) $((read_before_us + read_after_us)))"
}

zfs_send_receive() {  # zfs_send_receive TARGET SEND-ARGS...: with -F for incrementals
    local target=$1
    shift
    cur_zfs send "$@" | cur_zfs receive -F "$target"
}
btrfs_send_receive() {  # btrfs_send_receive SEND-ARGS...: into RECV_MNT, then syncfs it
    btrfs send -q "$@" | btrfs receive -q "$RECV_MNT"
    sync -f "$RECV_MNT"
}
copy_data() {  # the anchor: cp -a (never a reflink), then fsync every file copied
    cp -a --reflink=never -- "$DATA_DIR" "$RECV_MNT/cp"
    sync -- "$RECV_MNT"/cp/f*
    [[ -f $RECV_MNT/cp/f$((DATA_FILES - 1)) ]] || { log "cp -a copied nothing"; return 1; }
}

# send | receive of the dataset's snapshot into the receiving pool (or second btrfs), cold:
# metrics sendrecv_mbps and send_full_ms. Then cp -a of the same files between the same
# two filesystems, cold: cp_mbps. Then 1 MiB of one file rewritten, a second snapshot, and
# the incremental send | receive, cold: incr_ms.
send_receive() {
    local key=$1 us bytes
    bytes=$(mib_bytes "$DATA_MIB")
    recv_target "$key"
    case $CUR_ENGINE in
        zfs-fuse | zetta)
            drop_caches "$DATA_DIR"
            timed us zfs_send_receive "$RECV_POOL/send" "$CUR_POOL/send@s1"
            ;;
        btrfs)
            drop_caches
            timed us btrfs_send_receive "$CUR_MNT/send.s1"
            ;;
        *) skip_workload "$key" send "a plain directory has no send | receive; its cp -a is the anchor" ;;
    esac
    if [[ $CUR_ENGINE != raw ]]; then
        result "$key" sendrecv_mbps "$(mb_per_sec "$bytes" "$us")"
        result "$key" send_full_ms "$(ms_of "$us")"
    fi

    drop_caches "$DATA_DIR"
    timed us copy_data
    result "$key" cp_mbps "$(mb_per_sec "$bytes" "$us")"

    [[ $CUR_ENGINE == raw ]] && return 0
    dd if="$CORPUS/random.dat" of="$DATA_DIR/f0" bs=1M count=1 skip=$((DATA_MIB - 1)) \
        conv=notrunc,fsync status=none
    data_snapshot s2
    drop_caches "$DATA_DIR"
    case $CUR_ENGINE in
        zfs-fuse | zetta)
            timed us zfs_send_receive "$RECV_POOL/send" -i "$CUR_POOL/send@s1" "$CUR_POOL/send@s2"
            ;;
        btrfs)
            timed us btrfs_send_receive -p "$CUR_MNT/send.s1" "$CUR_MNT/send.s2"
            ;;
    esac
    result "$key" incr_ms "$(ms_of "$us")"
}

scrub_and_send() {
    local key=$1
    make_data
    data_snapshot s1
    scrub_time "$key"
    send_receive "$key"
}
