"""A disk whose power can be cut: crash images for durability tests.

:class:`PowerCutDisk` makes an ext4 filesystem in a sparse image file, mounts it through a loop
device, and on :meth:`PowerCutDisk.cut` copies the image file as the block device holds it at
that instant. Data a process wrote but never fsynced sits dirty in the page cache of the mounted
filesystem and has not reached the loop device yet, so it is missing from the copy, exactly as
after a power cut; everything fsynced is in it. The copy then replaces the image and is mounted
again (the kernel replays ext4's journal), which is the machine coming back up.

Cut only after the processes writing to the disk are dead (SIGKILL them first): a process that
keeps writing while the image is copied could leave a copy no real power cut produces.

The filesystem is mounted with ``commit=600``, so ext4 flushes only when asked (fsync) and not on
its own 5-second timer: unsynced data stays unsynced for the whole test, which makes losses that
a missing fsync would cause show up reliably.

Needs root, ``losetup`` and ``mkfs.ext4`` (util-linux and e2fsprogs); :func:`unavailable` says why
not when they are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["PowerCutDisk", "unavailable"]


def _run(*cmd: str) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def unavailable() -> str | None:
    """Why a :class:`PowerCutDisk` cannot be made here (one line), or None when it can."""
    if os.geteuid() != 0:
        return "power-cut disks need root (loop devices and mount)"
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"power-cut disks need {tool} (util-linux / e2fsprogs)"
    if not Path("/dev/loop-control").exists():
        return "power-cut disks need loop devices (/dev/loop-control is missing)"
    return None


class PowerCutDisk:
    """An ext4 image in ``workdir`` mounted at ``workdir/mnt`` (``.mount``).

    Args:
        workdir: a directory on a real filesystem (the image and its copies live there).
        size_mb: the image's size (sparse: only what is written takes space).

    Raises:
        OSError: the image cannot be made or mounted (see :func:`unavailable`).
    """

    def __init__(self, workdir: Path, size_mb: int = 256) -> None:
        self.workdir = Path(workdir)
        self.image = self.workdir / "disk.img"
        self.mount = self.workdir / "mnt"
        self.mount.mkdir(parents=True, exist_ok=True)
        with open(self.image, "wb") as f:
            f.truncate(size_mb << 20)
        _run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(self.image))
        self.cuts = 0
        self._mounted = False
        self._attach()

    def _attach(self) -> None:
        _run("mount", "-o", "loop,commit=600", str(self.image), str(self.mount))
        self._mounted = True

    def _detach(self) -> None:
        if self._mounted:
            _run("umount", str(self.mount))
            self._mounted = False

    def cut(self) -> None:
        """Cut the power and boot again: the disk keeps only what had reached the device.

        The writers must already be dead. Afterwards ``.mount`` holds the crash image, its
        journal replayed by the kernel.
        """
        crash = self.workdir / "crash.img"
        _run("cp", "--sparse=always", str(self.image), str(crash))
        self._detach()
        crash.replace(self.image)
        self.cuts += 1
        self._attach()

    def close(self) -> None:
        """Unmount (the loop device goes with it); the image file stays in ``workdir``."""
        self._detach()

    def __enter__(self) -> PowerCutDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
