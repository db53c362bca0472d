"""Data-dir removal benchmark: prints figures (not a test).

``pumice demo`` removes its data dir after a successful run; most of it is the Ray Pods'
runtime_env virtualenvs (33,610 files, 1.8 GB in session 8's run). This makes a tree of ``--files``
small files (``--size`` bytes each, 100 to a directory) under ``--dir`` (default: a fresh directory
under ~/.local/share/pumice, the demo's disk) twice and removes one copy with
:func:`shutil.rmtree` (the baseline: one unlink at a time) and the other with
:func:`pumice._util.files.remove_tree` (unlinks by a pool of threads), then prints both times and
the ratio. The gap depends on the disk: where each unlink waits on the device (ext4 mounted with
``discard`` on a virtual disk) it is large; on a disk that absorbs unlinks in the page cache both
are fast.

Usage: python bench/remove_tree.py [--files N] [--size BYTES] [--workers N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from pumice._util.files import remove_tree, scan_tree


def make_tree(root: Path, files: int, size: int) -> None:
    data = b"x" * size
    for i in range(files):
        d = root / f"d{i // 100}"
        if i % 100 == 0:
            d.mkdir(parents=True)
        (d / f"f{i % 100}").write_bytes(data)
    os.sync()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--dir", type=Path, default=Path.home() / ".local" / "share" / "pumice")
    a = ap.parse_args()
    a.dir.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="bench-remove-", dir=a.dir))
    try:
        make_tree(base / "rmtree", a.files, a.size)
        t = time.perf_counter()
        shutil.rmtree(base / "rmtree")
        baseline = time.perf_counter() - t
        make_tree(base / "pool", a.files, a.size)
        t = time.perf_counter()
        tree = scan_tree(base / "pool")
        errors = remove_tree(tree, workers=a.workers)
        pooled = time.perf_counter() - t
    finally:
        left = remove_tree(scan_tree(base))
        if left:
            print(f"could not remove the scratch dir {base}: {len(left)} entries, e.g. {left[0]}")
    if errors:
        raise SystemExit(f"remove_tree left {len(errors)} entries, e.g. {errors[0]}")
    print(f"{a.files:,} files of {a.size:,} B on {a.dir} (load {os.getloadavg()[0]:.1f}):")
    print(f"  shutil.rmtree (baseline)          {baseline:7.2f} s")
    print(f"  remove_tree, {a.workers} threads (scan incl.) {pooled:7.2f} s   ratio {baseline / pooled:.1f}x")


if __name__ == "__main__":
    main()
