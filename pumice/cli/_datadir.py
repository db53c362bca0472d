"""The data-directory lock every pumice command that opens a data dir takes.

One process at a time owns a data dir: ``pumice up``, ``pumice apiserver`` (both open
``<data-dir>/pumice.db`` and write ``<data-dir>/kubeconfig``) and ``pumice node-agent`` (its Pods'
state under its ``--data-dir``). A second one would hand out resourceVersions the first also hands
out, and rewrite the first one's kubeconfig.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO


class DataDirInUse(RuntimeError):
    """Another pumice process holds the data directory's lock."""


def lock_data_dir(data_dir: Path) -> IO[str]:
    """Take ``<data-dir>/pumice.lock`` (an exclusive, non-blocking flock) for this process.

    Creates ``data_dir`` when missing. Returns the open lock file; closing it releases the lock
    (the OS releases it at exit too). The file holds the holder's pid, for the refusal message.

    Raises:
        DataDirInUse: another process (or another open of the same file) holds it; the message
            names the holder's pid.
        NotADirectoryError: ``data_dir`` is a file (``data dir /etc/passwd is not a directory``).
        OSError: the directory cannot be created or the lock file opened.
    """
    if data_dir.exists() and not data_dir.is_dir():
        raise NotADirectoryError(f"data dir {data_dir} is not a directory")
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "pumice.lock"
    f = open(path, "a+")  # noqa: SIM115 - held for the life of the process
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = f.read().strip() or "?"
        f.close()
        raise DataDirInUse(f"data dir {data_dir} is in use by another pumice process (pid {holder})") from None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f
