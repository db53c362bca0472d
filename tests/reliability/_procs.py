"""Subprocesses of the suite: the API server and components, started with the same Python."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def start_apiserver(data_dir: Path, *, extra: tuple[str, ...] = ()) -> tuple[subprocess.Popen[str], str]:
    """``pumice apiserver`` on a free port over ``data_dir``; returns (process, URL) once it listens.

    Its stderr is appended to ``data_dir/apiserver.stderr.log`` (a file, not a pipe: nobody reads a
    pipe during a run, and a server that logged more than the pipe holds would block).

    Raises:
        AssertionError: it did not start (the tail of its stderr is in the message).
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / "apiserver.stderr.log"
    with open(log, "ab") as err:
        proc = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "apiserver", "--data-dir", str(data_dir),
                                 "--port", "0", *extra], stdout=subprocess.PIPE, stderr=err, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        proc.wait()
        raise AssertionError(f"apiserver did not start: {line!r} {log.read_text(errors='replace')[-2000:]}")
    return proc, line.rsplit(" ", 1)[-1].strip()


def start_component(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``pumice <args>`` with stdout and stderr to ``log`` (its own session, so kill -9 hits only it)."""
    f = open(log, "ab")  # noqa: SIM115 - the child keeps the descriptor
    return subprocess.Popen([sys.executable, "-m", "pumice.cli.main", *args], stdout=f, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)


def kill9(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """SIGKILL a process we started (by its pid) and reap it."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def stop(proc: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            kill9(proc)


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB (``/proc/<pid>/status`` VmRSS; 0 when gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0
