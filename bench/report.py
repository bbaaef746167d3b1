#!/usr/bin/env python3
"""Turn bench/run.sh results into the markdown section of docs/PERFORMANCE.md.

    report.py RESULTS.tsv INFO.tsv [--doc docs/PERFORMANCE.md]

RESULTS.tsv lines: contender <TAB> metric <TAB> value, where metric "skip" or "fail" carries
a reason instead of a number. INFO.tsv lines: key <TAB> value (machine, sizes, command).
Prints the section; with --doc also replaces the section in that file (or appends it).
"""
import sys

HEADING = "## Side by side: raw, kernel btrfs, zfs-fuse and Zetta"
# Earlier headings of the same section, replaced in place by the current one.
OLD_HEADINGS = ["## Side by side: raw, kernel btrfs, zfs-fuse (and Zetta when mountable)"]

# key, label, geometry. The order is the table's order and run.sh's order.
CONTENDERS = [
    ("raw", "raw directory on the host filesystem", "single"),
    ("btrfs", "kernel btrfs, 1 loop device", "single"),
    ("btrfs-raid1", "kernel btrfs raid1 (`-d raid1 -m raid1`), 2 loop devices", "mirror"),
    ("zfs-fuse", "zfs-fuse, 1 file vdev, compression=off", "single"),
    ("zfs-fuse-comp", "zfs-fuse, 1 file vdev, compression=on (lzjb)", "single"),
    ("zfs-fuse-mirror", "zfs-fuse, 2-way mirror of file vdevs, compression=off", "mirror"),
    ("zetta", "Zetta (FUSE), 1 file vdev, compression=off", "single"),
    ("zetta-lz4", "Zetta (FUSE), 1 file vdev, compression=lz4", "single"),
    ("zetta-mirror", "Zetta (FUSE), 2-way mirror of file vdevs, compression=off", "mirror"),
]
LABEL = {k: label for k, label, _ in CONTENDERS}
GEOMETRY = {k: g for k, _, g in CONTENDERS}
# Same-geometry anchors: btrfs and zfs-fuse (compression off) with as many devices.
BTRFS_ANCHOR = {"single": "btrfs", "mirror": "btrfs-raid1"}
ZFS_ANCHOR = {"single": "zfs-fuse", "mirror": "zfs-fuse-mirror"}

# metric key, column header. All are "higher is better" except the RSS.
METRICS = [
    ("seq_write", "seq write MB/s"),
    ("seq_read", "seq read MB/s"),
    ("randwrite_4k", "4k rand write MB/s"),
    ("randread_16k", "16k rand read MB/s"),
    ("create", "create files/s"),
    ("ls_lR", "`ls -lR` (cold) files/s"),
    ("find", "`find` files/s"),
    ("stat", "stat files/s"),
    ("delete", "delete files/s"),
    ("rss_mib", "daemon peak RSS MiB"),
]
RATIO_METRICS = [m for m in METRICS if m[0] != "rss_mib"]


def read_tsv(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                rows.append(line.split("\t", 2))
    return rows


def fmt_abs(value):
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}"


def table(header_first, columns, rows):
    out = ["| " + " | ".join([header_first] + [c for _, c in columns]) + " |"]
    out.append("|" + "---|" * (len(columns) + 1))
    out.extend("| " + " | ".join(r) + " |" for r in rows)
    return out


def build(results_path, info_path):
    info = {k: v for k, v in read_tsv(info_path)}
    figures, notes = {}, {}
    for key, metric, value in read_tsv(results_path):
        if metric in ("skip", "fail"):
            notes[key] = (metric, value)
        else:
            figures.setdefault(key, {})[metric] = float(value)

    def cells_abs(key):
        if key not in figures:
            kind = notes.get(key, ("skip", "not run"))[0]
            return ["skipped" if kind == "skip" else "failed"] + ["—"] * (len(METRICS) - 1)
        return [fmt_abs(figures[key][m]) if m in figures[key] else "—" for m, _ in METRICS]

    def cells_ratio(key, anchor):
        if key not in figures:
            return ["—"] * len(RATIO_METRICS)
        base = figures.get(anchor, {})
        cells = []
        for m, _ in RATIO_METRICS:
            if m in figures[key] and base.get(m):
                cells.append(f"{figures[key][m] / base[m]:.2f}")
            else:
                cells.append("—")
        return cells

    run_keys = [k for k, _, _ in CONTENDERS]
    lines = [HEADING, ""]
    lines += [
        "Written by `bench/run.sh`, which replaces this section on every run (edit the",
        "script, not this text). One command, as root, from a fresh clone: it installs fio,",
        "zfs-fuse, btrfs-progs and util-linux if they are missing (services kept from starting),",
        "builds each contender under one work directory on one host filesystem (sparse",
        "backing files of the same size; loop devices for btrfs, file vdevs for zfs-fuse and",
        "Zetta, a plain directory for raw), runs the same workloads on each in turn, tears",
        "everything down (also on failure or Ctrl-C) and prints this section. Zetta is the",
        "checkout's `target/release/zetta`, built with cargo only when it is missing.",
        "",
        "```sh",
        "bash bench/run.sh --quick     # about 5 minutes",
        "bash bench/run.sh             # full: 2 GiB sequential, 256m x 16 random writers, 100k files",
        "bash bench/run.sh --help      # --dir DIR (default /var/tmp/zetta-bench), --only, --no-doc",
        "```",
        "",
        "Workloads, in this order, on each contender (page cache dropped with",
        "`echo 3 > /proc/sys/vm/drop_caches` where it says cold; for zfs-fuse and Zetta the",
        "pool is also exported and imported to empty its ARC):",
        "",
        f"- seq write: fio 1M writes, psync, {info.get('seq_size', '?')} incompressible, `end_fsync=1`",
        "  (fio's runtime includes the fsync);",
        "- seq read: the same file, cold;",
        f"- 16k rand read: the same file, cold, psync, {info.get('rr_jobs', '?')} jobs each reading its",
        "  own part of the file once in random order (every block read once, no page-cache",
        "  hits; zfs-fuse and Zetta read whole 128K records, so their ARC can serve neighbours);",
        "- 4k rand write, the seeds' benchmark: `fio --name=random-writers --ioengine=sync",
        f"  --iodepth=4 --rw=randwrite --bs=4k --direct=0 --size={info.get('rw_size', '?')}"
        f" --numjobs={info.get('rw_jobs', '?')} --end_fsync=1`",
        f"  (plus `--group_reporting`, capped at {info.get('cap', '?')} s);",
        f"- small files (`bench/storm.py`): create {info.get('files', '?')} files of 1 KiB in",
        "  directories of 1000, then syncfs; `ls -lR` over them cold; `find` and `os.stat` of",
        "  each, warm; delete them all, then syncfs;",
        "- peak RSS (VmHWM) of the contender's daemon, zfs-fuse or zetta; the kernel",
        "  filesystems have none.",
        "",
        "zfs-fuse runs as packaged by Debian (`/etc/zfs/zfsrc`: ARC at most 100 MB, FUSE",
        "attribute and entry timeouts 3600 s), one fresh daemon per contender started by the",
        "harness. Its `compression=on` is lzjb (it has no lz4); the data is incompressible, so",
        "that row shows the cost of trying. Zetta runs with its defaults (ARC at most 64 MiB,",
        "FUSE attribute timeout 1 s, entry timeout 3600 s, 128K records, sync=standard), one fresh",
        "daemon per contender with its own `ZETTA_CACHE_FILE` under the run directory; the",
        "pool's root filesystem is the one measured. Ratios are within this one run: read",
        "them, not the absolute figures, which swing 2-4x between runs on this host-cached",
        "virtual disk.",
        "",
        f"Last run: {info.get('date', '?')}, commit {info.get('commit', '?')}, mode {info.get('mode', '?')}.",
        "",
        "| | |",
        "|---|---|",
        f"| command | `{info.get('command', '?')}` |",
        f"| CPU, cores | {info.get('cpu', '?')}, {info.get('nproc', '?')} cores |",
        f"| memory | {info.get('memory', '?')} |",
        f"| kernel | {info.get('kernel', '?')} |",
        f"| storage under the work dir | {info.get('storage', '?')} |",
        f"| load average at start | {info.get('load', '?')} |",
        f"| versions | {info.get('versions', '?')} |",
        f"| zetta | {info.get('zetta', '?')} |",
        f"| backing files | {info.get('vdev_size', '?')} each, sparse, in `{info.get('dir', '?')}` |",
        f"| page cache dropped | {info.get('drop_caches', '?')} |",
        f"| wall time | {info.get('wall', '?')} |",
        "",
        "Absolute figures (higher is better, except RSS):",
        "",
    ]
    lines += table("contender", METRICS, [[LABEL[k]] + cells_abs(k) for k in run_keys])
    lines += ["", "Ratio to raw (raw = 1.00):", ""]
    lines += table("contender", RATIO_METRICS,
                   [[LABEL[k]] + cells_ratio(k, "raw") for k in run_keys])
    lines += ["", "Ratio to kernel btrfs of the same geometry (1 device, or raid1 of 2):", ""]
    lines += table("contender", RATIO_METRICS,
                   [[LABEL[k]] + cells_ratio(k, BTRFS_ANCHOR[GEOMETRY[k]]) for k in run_keys])
    lines += ["", "Ratio to zfs-fuse of the same geometry, compression off:", ""]
    lines += table("contender", RATIO_METRICS,
                   [[LABEL[k]] + cells_ratio(k, ZFS_ANCHOR[GEOMETRY[k]]) for k in run_keys])
    if notes:
        lines += ["", "Not measured in this run:", ""]
        for k in run_keys:
            if k in notes:
                kind, why = notes[k]
                lines.append(f"- {LABEL[k]}: {'skipped' if kind == 'skip' else 'failed'} — {why}")
    lines.append("")
    return "\n".join(lines)


def replace_section(doc_path, section):
    with open(doc_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    start = next((i for i, line in enumerate(lines) if line in [HEADING] + OLD_HEADINGS),
                 None)
    if start is None:
        text = "\n".join(lines).rstrip("\n") + "\n\n" + section
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
                   len(lines))
        tail = lines[end:]
        text = "\n".join(lines[:start]) + "\n" + section
        if tail:
            text += "\n" + "\n".join(tail)
    if not text.endswith("\n"):
        text += "\n"
    with open(doc_path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    args = sys.argv[1:]
    doc = None
    if "--doc" in args:
        i = args.index("--doc")
        doc = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    section = build(args[0], args[1])
    print(section)
    if doc:
        replace_section(doc, section)
        print(f"(section written to {doc})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
