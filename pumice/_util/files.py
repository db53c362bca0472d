"""Files that survive a power cut, and trees removed quickly.

:func:`write_durably` replaces a file's content so that after a crash it holds either the old or
the new content, never an empty or partial file: write a temporary file beside it, fsync it,
rename it over the target, then fsync the directory (the rename itself lives in the directory).

:func:`scan_tree` and :func:`remove_tree` remove a directory tree with its files unlinked by a
pool of threads: on a file system where each unlink waits on the disk (ext4 mounted with
``discard`` on a virtual disk: about 3 ms a file, one at a time), overlapping them is ~30x faster
than :func:`shutil.rmtree` (10,000 4-KiB files: 30 s one by one, 1 s with 8 at a time).
"""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["MAX_INPUT_FILE_BYTES", "InputFileError", "NotTextError", "Tree", "fsync_dir", "read_text_file", "remove_tree", "scan_tree", "write_durably"]


#: The largest file :func:`read_text_file` reads: 256 MiB. The largest input pumice is known to be
#: given, Pollux's ``philly.csv`` (82,247 jobs), is about 5 MB, and a trace's text is held in memory
#: whole (its parse several times over), so a file past this is a mistake (a disk image, a log).
MAX_INPUT_FILE_BYTES = 256 * 2**20


class InputFileError(ValueError):
    """A file the user named that pumice refuses to read; the message names the file and why."""


class NotTextError(InputFileError):
    """A file that is not UTF-8 text; the message names the file and the first bad byte."""


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def read_text_file(path: Path) -> str:
    """The text of a file the user named (a manifest, a configuration, a trace), UTF-8, a leading
    byte-order mark dropped (Excel's "CSV UTF-8" writes one). A regular file, or a pipe (``--nodes
    <(...)``), of at most :data:`MAX_INPUT_FILE_BYTES`; a pipe is read only that far.

    Raises:
        InputFileError: ``<path>: not a regular file (a character device)`` (``/dev/zero``: read, it
            never ends), ``... (a directory)``; ``<path>: too large: 314,572,800 bytes (at most 256 MiB is read)``.
        NotTextError: ``<path>: not a text file: byte 0x82 at offset 7 is not UTF-8``.
        OSError: the file cannot be read (missing, no permission).
    """
    mode = os.stat(path).st_mode
    for test, kind in _KINDS:
        if test(mode):
            raise InputFileError(f"{path}: not a regular file ({kind})")
    limit = MAX_INPUT_FILE_BYTES
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size if stat.S_ISREG(mode) else 0
        data = f.read(limit + 1) if size <= limit else b""
        if size > limit or len(data) > limit:
            got = f"{size:,} bytes" if size > limit else f"more than {limit:,} bytes"
            raise InputFileError(f"{path}: too large: {got} (at most {limit // 2**20} MiB is read)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise NotTextError(f"{path}: not a text file: byte 0x{e.object[e.start]:02x} at offset {e.start} is not UTF-8"
                           ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text  # as text mode reads


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


@dataclass
class Tree:
    """What :func:`scan_tree` found under ``root``: every non-directory entry (files, symlinks,
    sockets...; a symlink to a directory is one entry, not followed), every directory (deepest
    first, ``root`` last), the bytes the files hold (``st_blocks`` x 512: what removal frees), and
    the entries that could not be read or removed (``"<path>: <error>"``)."""

    root: Path
    files: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    bytes: int = 0
    errors: list[str] = field(default_factory=list)


def scan_tree(root: Path) -> Tree:
    """List the tree under ``root`` (a directory; not following symlinks) for :func:`remove_tree`.
    Errors reading a directory or an entry go to :attr:`Tree.errors`; a missing ``root`` is an
    empty tree."""
    tree = Tree(Path(root))
    if not tree.root.exists():
        return tree
    stack = [str(tree.root)]
    order: list[str] = []
    while stack:
        d = stack.pop()
        order.append(d)
        try:
            with os.scandir(d) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                        else:
                            tree.files.append(e.path)
                            tree.bytes += e.stat(follow_symlinks=False).st_blocks * 512
                    except OSError as err:
                        tree.errors.append(f"{e.path}: {err.strerror or err}")
        except OSError as err:
            tree.errors.append(f"{d}: {err.strerror or err}")
    tree.dirs = order[::-1]  # a directory is listed after its parent: reversed, children come first
    return tree


def remove_tree(tree: Tree, *, workers: int = 16) -> list[str]:
    """Remove what :func:`scan_tree` found: the files by ``workers`` threads at once, then the
    directories deepest first. Returns the errors (``"<path>: <error>"``, the scan's first): an
    entry that could not be removed, and the directories it kept. Entries already gone are no
    error."""
    errors = list(tree.errors)

    def unlink(path: str) -> str | None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as err:
            return f"{path}: {err.strerror or err}"
        return None

    if tree.files:
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="remove-tree") as pool:
            errors += [e for e in pool.map(unlink, tree.files) if e is not None]
    for d in tree.dirs:
        try:
            os.rmdir(d)
        except FileNotFoundError:
            pass
        except OSError as err:
            errors.append(f"{d}: {err.strerror or err}")
    return errors
