#!/usr/bin/env python3
"""Turn bench/run.sh results into the markdown section of docs/PERFORMANCE.md.

    report.py RESULTS.tsv INFO.tsv [--doc docs/PERFORMANCE.md]

RESULTS.tsv lines: contender <TAB> metric <TAB> value, where metric "skip" or "fail" carries
a reason for the whole contender instead of a number, "skip:WORKLOAD" the reason one
workload makes no sense there, and "note" something that happened during the run. INFO.tsv lines: key <TAB> value (machine, sizes, command).
Prints the section; with --doc also replaces the section in that file (or appends it).
How the workloads are run is described in docs/PERFORMANCE.md's section "Side by side:
what bench/run.sh measures", which this script leaves alone.
"""
import sys

HEADING = "## Side by side: raw, kernel btrfs, zfs-fuse and Zetta"
# Earlier headings of the same section, replaced in place by the current one.
OLD_HEADINGS = ["## Side by side: raw, kernel btrfs, zfs-fuse (and Zetta when mountable)"]

# key, label, geometry, compressed. The order is the table's order and run.sh's order.
CONTENDERS = [
    ("raw", "raw directory on the host filesystem", "single", False),
    ("btrfs", "kernel btrfs, 1 loop device", "single", False),
    ("btrfs-raid1", "kernel btrfs raid1 (`-d raid1 -m raid1`), 2 loop devices", "mirror", False),
    ("zfs-fuse", "zfs-fuse, 1 file vdev, compression=off", "single", False),
    ("zfs-fuse-comp", "zfs-fuse, 1 file vdev, compression=on (lzjb)", "single", True),
    ("zfs-fuse-mirror", "zfs-fuse, 2-way mirror of file vdevs, compression=off", "mirror", False),
    ("zetta", "Zetta (FUSE), 1 file vdev, compression=off", "single", False),
    ("zetta-lz4", "Zetta (FUSE), 1 file vdev, compression=lz4", "single", True),
    ("zetta-mirror", "Zetta (FUSE), 2-way mirror of file vdevs, compression=off", "mirror", False),
]
LABEL = {k: label for k, label, _, _ in CONTENDERS}
GEOMETRY = {k: g for k, _, g, _ in CONTENDERS}
COMPRESSED = {k: c for k, _, _, c in CONTENDERS}
# Same-geometry anchors: btrfs with as many devices; zfs-fuse with as many devices and
# compression on where the contender compresses (zfs-fuse has lzjb where Zetta has lz4).
BTRFS_ANCHOR = {"single": "btrfs", "mirror": "btrfs-raid1"}


def zfs_anchor(key):
    if GEOMETRY[key] == "mirror":
        return "zfs-fuse-mirror"
    return "zfs-fuse-comp" if COMPRESSED[key] else "zfs-fuse"


# Metric kinds: "rate" (higher is better; ratio = contender / anchor), "time" (lower is
# better; ratio = anchor / contender, so above 1.00 is faster in both), "ratio" (a
# dimensionless figure, higher is better, two decimals), "info" (shown, never compared),
# "reported" (a ratio the engine reports, two decimals, never compared).
# A metric is key, column header, kind.
FILE_METRICS = [
    ("seq_write", "seq write MB/s", "rate"),
    ("seq_read", "seq read MB/s", "rate"),
    ("randwrite_4k", "4k rand write MB/s", "rate"),
    ("randread_16k", "16k rand read MB/s", "rate"),
    ("create", "create files/s", "rate"),
    ("ls_lR", "`ls -lR` (cold) files/s", "rate"),
    ("find", "`find` files/s", "rate"),
    ("stat", "stat files/s", "rate"),
    ("delete", "delete files/s", "rate"),
    ("rss_mib", "daemon peak RSS MiB", "info"),
]
POOL_METRICS = [
    ("snap_empty_ms", "snapshot, empty fs ms", "time"),
    ("snap_seq_ms", "snapshot after seq file ms", "time"),
    ("snap_files_ms", "snapshot after the files ms", "time"),
    ("scrub_mbps", "scrub MB/s", "rate"),
    ("read_mbps", "host read of the same bytes MB/s", "info"),
    ("scrub_vs_read", "scrub / host read", "ratio"),
    ("sendrecv_mbps", "send \\| receive MB/s", "rate"),
    ("cp_mbps", "`cp -a` MB/s", "rate"),
    ("send_vs_cp", "send \\| receive / `cp -a`", "ratio"),
    ("incr_ms", "incremental, 1 MiB changed, ms", "time"),
    ("incr_pct", "incremental / full time %", "info"),
]
CORPUS_METRICS = [
    ("text_mbps", "text write MB/s", "rate"),
    ("text_space_ratio", "text size / space used", "ratio"),
    ("text_compressratio", "text `compressratio`", "reported"),
    ("vm_mbps", "VM image write MB/s", "rate"),
    ("vm_space_ratio", "VM image size / space used", "ratio"),
    ("vm_compressratio", "VM image `compressratio`", "reported"),
]
VOLUME_METRICS = [
    ("vol_randwrite_4k", "volume 4k rand write MB/s", "rate"),
    ("vol_seqwrite_1m", "volume 1M seq write MB/s", "rate"),
]
# Figures computed from others of the same contender: key -> (numerator, denominator, scale).
DERIVED = {
    "scrub_vs_read": ("scrub_mbps", "read_mbps", 1),
    "send_vs_cp": ("sendrecv_mbps", "cp_mbps", 1),
    "incr_pct": ("incr_ms", "send_full_ms", 100),
}
# For the ratio to raw, which has no scrub or send: the raw figure each is held against.
RAW_EQUIVALENT = {"scrub_mbps": "read_mbps", "sendrecv_mbps": "cp_mbps"}


def read_tsv(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                rows.append(line.split("\t", 2))
    return rows


def fmt_abs(value, kind):
    if kind in ("ratio", "reported"):
        return f"{value:.2f}"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}"


def table(header_first, columns, rows):
    out = ["| " + " | ".join([header_first] + [c for _, c, _ in columns]) + " |"]
    out.append("|" + "---|" * (len(columns) + 1))
    out.extend("| " + " | ".join(r) + " |" for r in rows)
    return out


def load(results_path):
    figures, notes, workload_notes = {}, {}, {}
    for key, metric, value in read_tsv(results_path):
        if metric in ("skip", "fail"):
            notes[key] = (metric, value)
        elif metric == "note":
            workload_notes.setdefault(key, []).append(("note", value))
        elif metric.startswith("skip:"):
            workload_notes.setdefault(key, []).append((metric[len("skip:"):], value))
        else:
            figures.setdefault(key, {})[metric] = float(value)
    for values in figures.values():
        for derived, (num, den, scale) in DERIVED.items():
            if values.get(num) is not None and values.get(den):
                values[derived] = values[num] / values[den] * scale
    return figures, notes, workload_notes


def build(results_path, info_path):
    info = {k: v for k, v in read_tsv(info_path)}
    figures, notes, workload_notes = load(results_path)
    run_keys = [k for k, _, _, _ in CONTENDERS]

    def cells_abs(key, metrics):
        if key not in figures:
            kind = notes.get(key, ("skip", "not run"))[0]
            return ["skipped" if kind == "skip" else "failed"] + ["—"] * (len(metrics) - 1)
        return [fmt_abs(figures[key][m], kind) if m in figures[key] else "—"
                for m, _, kind in metrics]

    def cells_ratio(key, anchor, metrics):
        if key not in figures:
            return ["—"] * len(metrics)
        base = figures.get(anchor, {})
        cells = []
        for m, _, kind in metrics:
            b = base.get(RAW_EQUIVALENT.get(m, m) if anchor == "raw" else m)
            v = figures[key].get(m)
            if v is None or not b:
                cells.append("—")
            elif kind == "time":
                cells.append(f"{b / v:.2f}" if v else "—")
            else:
                cells.append(f"{v / b:.2f}")
        return cells

    def compared(metrics):
        return [m for m in metrics if m[2] in ("rate", "time", "ratio")]

    def ratio_tables(anchor_of):
        out = table("contender", compared(FILE_METRICS),
                    [[LABEL[k]] + cells_ratio(k, anchor_of(k), compared(FILE_METRICS))
                     for k in run_keys])
        later = compared(POOL_METRICS) + compared(CORPUS_METRICS) + compared(VOLUME_METRICS)
        later = [m for m in later if m[0] not in DERIVED]
        out += [""]
        out += table("contender", later,
                     [[LABEL[k]] + cells_ratio(k, anchor_of(k), later) for k in run_keys])
        return out

    lines = [HEADING, ""]
    lines += [
        "Written by `bench/run.sh`, which replaces this section on every run (edit the",
        "script, not this text); how it measures is the section above. Ratios are within",
        "this one run: read them, not the absolute figures, which swing 2-4x between runs on",
        "this host-cached virtual disk.",
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
        f"| sequential file | {info.get('seq_size', '?')}, then {info.get('rr_jobs', '?')} random readers |",
        f"| 4k random writers | {info.get('rw_jobs', '?')} x {info.get('rw_size', '?')}, capped at {info.get('cap', '?')} s |",
        f"| small files | {info.get('files', '?')} |",
        f"| scrubbed and sent dataset | {info.get('data_size', '?')} in {info.get('data_files', '?')} files: {info.get('data_corpus', '?')} |",
        f"| text corpus | {info.get('text_corpus', '?')} |",
        f"| VM image | {info.get('vm_corpus', '?')} |",
        f"| snapshot times | median of {info.get('snapshot_repeats', '?')} |",
        f"| page cache dropped | {info.get('drop_caches', '?')} |",
        f"| wall time | {info.get('wall', '?')} |",
        "",
        "Absolute figures: files and memory (higher is better, except RSS):",
        "",
    ]
    lines += table("contender", FILE_METRICS,
                   [[LABEL[k]] + cells_abs(k, FILE_METRICS) for k in run_keys])
    lines += ["", "Absolute figures: snapshots, scrub and send | receive (times: lower is",
              "better):", ""]
    lines += table("contender", POOL_METRICS,
                   [[LABEL[k]] + cells_abs(k, POOL_METRICS) for k in run_keys])
    lines += ["", "Absolute figures: writing the compressible corpus (btrfs into a directory",
              "with compression=lzo; `compressratio` is what the pool reports):", ""]
    lines += table("contender", CORPUS_METRICS,
                   [[LABEL[k]] + cells_abs(k, CORPUS_METRICS) for k in run_keys])
    lines += ["", "Absolute figures: volumes (a block device of "
              f"{info.get('vol_size', '?')}, O_DIRECT: raw and btrfs a loop device over a file,",
              "Zetta a volume's /dev/zvol):", ""]
    lines += table("contender", VOLUME_METRICS,
                   [[LABEL[k]] + cells_abs(k, VOLUME_METRICS) for k in run_keys])
    lines += ["", "In the ratio tables above 1.00 is better than the anchor: for rates",
              "contender / anchor, for times anchor / contender.", ""]
    lines += ["Ratio to raw (raw = 1.00; scrub against raw's cold read of the same bytes,",
              "send | receive against raw's `cp -a`):", ""]
    lines += ratio_tables(lambda k: "raw")
    lines += ["", "Ratio to kernel btrfs of the same geometry (1 device, or raid1 of 2):", ""]
    lines += ratio_tables(lambda k: BTRFS_ANCHOR[GEOMETRY[k]])
    lines += ["", "Ratio to zfs-fuse of the same geometry and compression (off, or its lzjb",
              "for Zetta's lz4):", ""]
    lines += ratio_tables(zfs_anchor)
    if notes or workload_notes:
        lines += ["", "Not measured in this run, and notes:", ""]
        for k in run_keys:
            if k in notes:
                kind, why = notes[k]
                lines.append(f"- {LABEL[k]}: {'skipped' if kind == 'skip' else 'failed'} — {why}")
            for workload, why in workload_notes.get(k, []):
                lines.append(f"- {LABEL[k]}, {workload}: {why}")
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
