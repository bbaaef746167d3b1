#!/usr/bin/env python3
"""Small-file storm: create, stat and delete N small files; time a command over them.

    storm.py create DIR N          make DIR/dNNNN/fNNNN (1000 files a directory, 1 KiB
                                   each), then syncfs; print files/s
    storm.py stat   DIR N          os.stat every file; print files/s
    storm.py delete DIR N          unlink every file and directory, then syncfs; print files/s
    storm.py cmd    DIR N -- CMD   run CMD (stdout to /dev/null); print N / elapsed seconds

Every phase prints one number, operations (files) per second, on stdout.
"""
import ctypes
import os
import subprocess
import sys
import time

PER_DIR = 1000
PAYLOAD = os.urandom(1024)  # incompressible, so compression=on gains nothing here

_libc = ctypes.CDLL(None, use_errno=True)


def syncfs(path: str) -> None:
    """Flush the filesystem holding path (Python has no os.syncfs)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _libc.syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
    finally:
        os.close(fd)


def dir_of(root: str, i: int) -> str:
    return os.path.join(root, f"d{i // PER_DIR:04d}")


def file_of(root: str, i: int) -> str:
    return os.path.join(dir_of(root, i), f"f{i % PER_DIR:04d}")


def create(root: str, n: int) -> None:
    os.makedirs(root, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    for i in range(n):
        if i % PER_DIR == 0:
            os.mkdir(dir_of(root, i))
        fd = os.open(file_of(root, i), flags, 0o644)
        os.write(fd, PAYLOAD)
        os.close(fd)
    syncfs(root)


def stat(root: str, n: int) -> None:
    for i in range(n):
        os.stat(file_of(root, i))


def delete(root: str, n: int) -> None:
    for i in range(n):
        os.unlink(file_of(root, i))
        if i % PER_DIR == PER_DIR - 1 or i == n - 1:
            os.rmdir(dir_of(root, i))
    os.rmdir(root)
    syncfs(os.path.dirname(root.rstrip("/")) or "/")


def main() -> int:
    args = sys.argv[1:]
    if len(args) < 3 or args[0] not in ("create", "stat", "delete", "cmd"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    phase, root, n = args[0], args[1], int(args[2])
    start = time.perf_counter()
    if phase == "cmd":
        if len(args) < 5 or args[3] != "--":
            print("storm.py cmd DIR N -- CMD...", file=sys.stderr)
            return 2
        subprocess.run(args[4:], stdout=subprocess.DEVNULL, check=True)
    else:
        {"create": create, "stat": stat, "delete": delete}[phase](root, n)
    elapsed = time.perf_counter() - start
    print(f"{n / elapsed:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
