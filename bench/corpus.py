#!/usr/bin/env python3
"""Make the source files of bench/run.sh's data workloads, once per run, on the host fs.

    corpus.py random  OUT MIB        incompressible bytes (os.urandom)
    corpus.py text    OUT MIB        a tar of /usr/share/doc with its .gz files expanded,
                                     cut (or repeated) to exactly MIB MiB
    corpus.py vmimage OUT MIB TEXT   a VM-image-like file built from 1 MiB extents
                                     (seeded, so the same on every run): 60% zeros, 25%
                                     slices of the TEXT file (compressible "OS files"),
                                     15% random bytes (compressed packages, media)

Each prints one line describing what it made, for the run's machine details. The text
corpus depends on the packages installed (their documentation), so its compressratio is
comparable between contenders of one run, not between machines; the VM image's layout is
fixed by the seed.
"""
import gzip
import io
import os
import random
import sys
import tarfile

MIB = 1 << 20
DOC_ROOT = "/usr/share/doc"
VM_SEED = 20261122
VM_ZERO_SHARE, VM_TEXT_SHARE = 0.60, 0.25  # the rest is random


def write_random(out: str, mib: int) -> str:
    with open(out, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(MIB))
    return f"{mib} MiB of os.urandom"


def doc_members():
    """(name, bytes) of every regular file under /usr/share/doc, .gz files expanded."""
    for directory, subdirs, files in os.walk(DOC_ROOT):
        subdirs.sort()
        for name in sorted(files):
            path = os.path.join(directory, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as f:
                    data = f.read()
                if name.endswith(".gz"):
                    data = gzip.decompress(data)
                    path = path[:-3]
            except (OSError, EOFError, gzip.BadGzipFile):
                continue
            yield path.lstrip("/"), data


class Budget(io.RawIOBase):
    """A file that takes bytes up to a limit and then refuses more (the tar is cut there)."""

    def __init__(self, f, limit):
        self.f, self.left, self.full = f, limit, False

    def writable(self):
        return True

    def write(self, b):
        if self.full:  # tarfile's closing blocks after the cut: dropped
            return len(b)
        take = min(len(b), self.left)
        self.f.write(bytes(b[:take]))
        self.left -= take
        if take < len(b):
            self.full = True
            raise EOFError("budget reached")
        return take


def write_text(out: str, mib: int) -> str:
    rounds = 0
    with open(out, "wb") as f:
        budget = Budget(f, mib * MIB)
        tar = tarfile.open(fileobj=budget, mode="w|", format=tarfile.GNU_FORMAT)
        try:
            while True:  # repeat the documentation when it is shorter than the corpus
                rounds += 1
                added = 0
                for name, data in doc_members():
                    info = tarfile.TarInfo(f"r{rounds}/{name}")
                    info.size = len(data)
                    info.mtime = 0
                    tar.addfile(info, io.BytesIO(data))
                    added += len(data)
                if added == 0:
                    raise SystemExit(f"corpus.py: no readable files under {DOC_ROOT}")
        except EOFError:
            tar.close()
    how = f"the documentation repeated {rounds}x" if rounds > 1 else "cut at that size"
    return f"{mib} MiB tar of {DOC_ROOT} with .gz files expanded ({how})"


def write_vmimage(out: str, mib: int, text_path: str) -> str:
    rng = random.Random(VM_SEED)
    text_size = os.path.getsize(text_path)
    zero = bytes(MIB)
    counts = {"zero": 0, "text": 0, "random": 0}
    with open(out, "wb") as f, open(text_path, "rb") as text:
        for _ in range(mib):
            pick = rng.random()
            if pick < VM_ZERO_SHARE:
                f.write(zero)
                counts["zero"] += 1
            elif pick < VM_ZERO_SHARE + VM_TEXT_SHARE and text_size >= MIB:
                text.seek(rng.randrange(0, text_size - MIB + 1) & ~4095)
                f.write(text.read(MIB))
                counts["text"] += 1
            else:
                f.write(rng.randbytes(MIB))
                counts["random"] += 1
    return (f"{mib} MiB VM-image-like: {counts['zero']} MiB zeros, {counts['text']} MiB"
            f" text slices, {counts['random']} MiB random (seed {VM_SEED})")


def main() -> int:
    args = sys.argv[1:]
    if len(args) < 3 or args[0] not in ("random", "text", "vmimage"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    kind, out, mib = args[0], args[1], int(args[2])
    if kind == "random":
        print(write_random(out, mib))
    elif kind == "text":
        print(write_text(out, mib))
    else:
        if len(args) != 4:
            print("corpus.py vmimage OUT MIB TEXT", file=sys.stderr)
            return 2
        print(write_vmimage(out, mib, args[3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
