"""Files that survive a power cut.

:func:`write_durably` replaces a file's content so that after a crash it holds either the old or
the new content, never an empty or partial file: write a temporary file beside it, fsync it,
rename it over the target, then fsync the directory (the rename itself lives in the directory).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fsync_dir", "write_durably"]


def fsync_dir(path: Path) -> None:
    """Make the entries of directory ``path`` (creations, renames) durable.

    Raises:
        OSError: the directory cannot be opened or synced.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, data: bytes | str, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` (str is UTF-8 encoded), file mode ``mode``, durably.

    Raises:
        OSError: the file cannot be written or synced (the old content, if any, is kept).
    """
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(path)
    fsync_dir(path.parent)
