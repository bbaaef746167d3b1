#!/usr/bin/env python3
"""Print the MB/s (10^6 bytes per second) of one direction from a fio JSON file.

    fio_mbps.py FILE read|write

Sums bw_bytes over the jobs in the file (with --group_reporting there is one). fio's
runtime, and so its bandwidth, includes the end_fsync when the job asks for one.
"""
import json
import sys


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[2] not in ("read", "write"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path, direction = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # fio may print notes before the JSON document; start at the first brace.
    doc = json.loads(text[text.index("{"):])
    jobs = doc.get("jobs", [])
    if not jobs:
        print(f"{path}: no jobs in fio output", file=sys.stderr)
        return 1
    errors = [j.get("error", 0) for j in jobs if j.get("error", 0)]
    if errors:
        print(f"{path}: fio reported error {errors[0]}", file=sys.stderr)
        return 1
    bw = sum(j[direction]["bw_bytes"] for j in jobs)
    print(f"{bw / 1e6:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
