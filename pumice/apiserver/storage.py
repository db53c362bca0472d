"""Durable storage backends behind the API server's object cache.

The :class:`Storage` protocol is deliberately small, like etcd seen from kube-apiserver: a flat
key space of encoded objects and one global revision. The server keeps every current object in
memory (:mod:`pumice.apiserver.store`) and asks the backend only to load everything at start, to
commit each write, and to say when a committed revision is durable.

Keys: ``"<group>/<plural>/<namespace>/<name>"`` (``""`` for the core group and for cluster-scoped
objects). Values: the object encoded as JSON bytes, with ``metadata.resourceVersion`` already set.

Backends:
- :class:`MemoryStorage`: nothing durable; for tests and the simulator.
- :class:`SqliteStorage`: stdlib sqlite3 in WAL mode, one transaction per commit. Two durability
  modes (``--durability`` of ``pumice apiserver`` and ``pumice up``):

  ``strict`` (default): a write is acknowledged only once it is on disk, as etcd fsyncs its log
  before it answers. Commits run with ``synchronous=NORMAL`` (atomic and ordered, no fsync each);
  :meth:`SqliteStorage.sync` then waits for one ``fdatasync`` of the WAL file that covers every
  commit made before it started. A fsync runs in a background thread while the event loop goes on
  committing, so concurrent writers share one fsync (group commit) and readers never wait on it.

  ``relaxed``: today's throwaway-cluster mode: acknowledged after the commit, before any fsync. A
  killed process loses nothing; a power cut or kernel crash can lose the last acknowledged writes
  (never corrupt the file: SQLite's WAL with ``synchronous=NORMAL`` keeps checkpoints ordered).

  Why a fsync of the WAL is enough: in WAL mode a commit appends its frames to ``<db>-wal``; with
  ``synchronous=NORMAL`` SQLite itself syncs the WAL before every checkpoint, the database after it,
  and the WAL header when it is reused, so the only data at risk are frames not yet synced, which
  is what our fsync covers.

Mirrors: k8s.io/apiserver pkg/storage/interfaces.go (Interface), in spirit; the group commit is
etcd's (server/storage/wal: one fsync per batch of entries).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import os
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path
from typing import Protocol

__all__ = ["Durability", "MemoryStorage", "SqliteStorage", "Storage", "StorageError"]

log = logging.getLogger(__name__)


class StorageError(RuntimeError):
    """The backend could not load, commit or sync (disk full, corrupt file, I/O error)."""


class Durability(StrEnum):
    """When a write is acknowledged (see the module docstring)."""

    STRICT = "strict"
    RELAXED = "relaxed"


class Storage(Protocol):
    """A durable key space with a global revision.

    ``load`` and ``commit`` are synchronous and called from the server's event loop thread only;
    ``sync`` is awaited on that loop.
    """

    def load(self) -> tuple[int, list[tuple[str, bytes]]]:
        """Return ``(revision, [(key, value), ...])`` of everything stored (revision 0 when empty)."""
        ...

    def commit(self, revision: int, puts: Sequence[tuple[str, bytes]], deletes: Sequence[str]) -> None:
        """Atomically write ``puts``, remove ``deletes`` and record ``revision``.

        Raises:
            StorageError: when the transaction did not commit (nothing was written).
        """
        ...

    @property
    def durable_revision(self) -> int:
        """The highest committed revision that survives a power cut (for relaxed and in-memory
        backends: the highest committed revision)."""
        ...

    @property
    def failure(self) -> StorageError | None:
        """The error that made the backend refuse commits (a failed fsync), or None while it
        works (what ``componentstatuses`` reports as the storage's health)."""
        ...

    async def sync(self, revision: int) -> None:
        """Return once every commit up to ``revision`` is durable.

        Raises:
            StorageError: the data could not be made durable (the backend then refuses commits).
        """
        ...

    def close(self) -> None: ...


class MemoryStorage:
    """Keeps the key space in a dict; survives a server restart within one process when the
    same instance is reused."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._revision = 0

    def load(self) -> tuple[int, list[tuple[str, bytes]]]:
        return self._revision, sorted(self._data.items())

    def commit(self, revision: int, puts: Sequence[tuple[str, bytes]], deletes: Sequence[str]) -> None:
        for k, v in puts:
            self._data[k] = v
        for k in deletes:
            self._data.pop(k, None)
        self._revision = revision

    @property
    def durable_revision(self) -> int:
        return self._revision

    @property
    def failure(self) -> StorageError | None:
        return None

    async def sync(self, revision: int) -> None:
        return None

    def close(self) -> None:
        pass


class SqliteStorage:
    """stdlib sqlite3 (WAL) file ``<path>``; tables ``objects(key, value)`` and ``meta``.

    Args:
        path: the database file (created with its parent directory when missing).
        durability: ``"strict"`` (default: :meth:`sync` waits for a group fsync) or ``"relaxed"``
            (:meth:`sync` returns at once); see the module docstring.

    Raises:
        StorageError: the file cannot be opened or is not a pumice database.
        ValueError: an unknown durability.
    """

    def __init__(self, path: Path | str, *, durability: Durability | str = Durability.STRICT) -> None:
        try:
            self.durability = Durability(durability)
        except ValueError:
            raise ValueError(f"durability must be strict or relaxed, not {durability!r}") from None
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS objects (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
            self._db.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('revision', 0)")
            row = self._db.execute("SELECT value FROM meta WHERE name='revision'").fetchone()
        except sqlite3.DatabaseError as e:
            raise StorageError(f"cannot open {self.path}: {e}") from e
        self._committed = self._durable = int(row[0]) if row else 0
        self._failed: StorageError | None = None
        self._wal_fd = -1
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self._flusher: asyncio.Task[None] | None = None
        self._executor: ThreadPoolExecutor | None = None
        #: fsyncs done by the group commit, and the commits they covered (for the benchmark's figures)
        self.fsyncs = 0
        if self.durability is Durability.STRICT:
            self._open_wal()

    def _open_wal(self) -> None:
        """Keep a descriptor on ``<db>-wal`` (which SQLite keeps while this connection is open) and
        make the files' directory entries durable once."""
        wal = Path(f"{self.path}-wal")
        try:
            self._wal_fd = os.open(wal, os.O_RDONLY | os.O_CLOEXEC)
            os.fdatasync(self._wal_fd)
            dir_fd = os.open(self.path.parent, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as e:
            raise StorageError(f"cannot make {wal} durable: {e}") from e
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pumice-fsync")

    def load(self) -> tuple[int, list[tuple[str, bytes]]]:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE name='revision'").fetchone()
            rows = self._db.execute("SELECT key, value FROM objects ORDER BY key").fetchall()
        except sqlite3.DatabaseError as e:
            raise StorageError(f"cannot read {self.path}: {e}") from e
        return (int(row[0]) if row else 0), [(k, bytes(v)) for k, v in rows]

    def commit(self, revision: int, puts: Sequence[tuple[str, bytes]], deletes: Sequence[str]) -> None:
        if self._failed is not None:
            raise self._failed
        db = self._db
        try:
            db.execute("BEGIN")
            try:
                if len(puts) == 1:
                    db.execute("INSERT OR REPLACE INTO objects (key, value) VALUES (?, ?)", puts[0])
                elif puts:
                    db.executemany("INSERT OR REPLACE INTO objects (key, value) VALUES (?, ?)", puts)
                for k in deletes:
                    db.execute("DELETE FROM objects WHERE key=?", (k,))
                db.execute("UPDATE meta SET value=? WHERE name='revision'", (revision,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise StorageError(f"commit to {self.path} failed: {e}") from e
        self._committed = revision
        if self.durability is Durability.RELAXED:
            self._durable = revision

    @property
    def durable_revision(self) -> int:
        return self._durable

    @property
    def failure(self) -> StorageError | None:
        return self._failed

    async def sync(self, revision: int) -> None:
        """Wait until ``revision`` is durable: at once in relaxed mode or when it already is;
        otherwise for the next group fsync of the WAL that starts after its commit.

        Raises:
            StorageError: a fsync failed (every waiter gets it, and later commits are refused:
                after a failed fsync the kernel may have dropped the pages, so the only safe
                continuation is a restart that reloads what is on disk).
        """
        if self._failed is not None:
            raise self._failed
        if revision <= self._durable:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (revision, next(self._seq), fut))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush(), name="pumice-group-commit")
        await fut

    async def _flush(self) -> None:
        """Fsync the WAL while anybody waits; each fsync covers every commit made before it began."""
        loop = asyncio.get_running_loop()
        while self._waiters:
            target = self._committed
            try:
                await loop.run_in_executor(self._executor, os.fdatasync, self._wal_fd)
            except OSError as e:
                self._fail(StorageError(f"fsync of {self.path}-wal failed: {e}"))
                return
            self.fsyncs += 1
            self._durable = max(self._durable, target)
            waiters = self._waiters
            while waiters and waiters[0][0] <= target:
                _, _, fut = heapq.heappop(waiters)
                if not fut.done():
                    fut.set_result(None)

    def _fail(self, error: StorageError) -> None:
        log.error("storage %s is no longer writable: %s; restart the API server to reload from disk",
                  self.path, error)
        self._failed = error
        while self._waiters:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_exception(error)

    def close(self) -> None:
        """Close the database (pending syncs are not waited for: nothing acknowledged is pending)."""
        if self._flusher is not None and not self._flusher.done():
            self._flusher.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        try:
            self._db.close()
        except sqlite3.Error as e:
            log.warning("closing %s: %s", self.path, e)
        if self._wal_fd >= 0:
            os.close(self._wal_fd)
            self._wal_fd = -1
