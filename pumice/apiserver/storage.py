"""Durable storage backends behind the API server's object cache.

The :class:`Storage` protocol is deliberately small, like etcd seen from kube-apiserver: a flat
key space of encoded objects and one global revision. The server keeps every current object in
memory (:mod:`pumice.apiserver.store`) and asks the backend only to load everything at start and
to commit each write.

Keys: ``"<group>/<plural>/<namespace>/<name>"`` (``""`` for the core group and for cluster-scoped
objects). Values: the object encoded as JSON bytes, with ``metadata.resourceVersion`` already set.

Backends:
- :class:`MemoryStorage`: nothing durable; for tests and the simulator.
- :class:`SqliteStorage`: stdlib sqlite3 in WAL mode, one transaction per commit; a write is
  acknowledged only after its transaction commits. ``synchronous=NORMAL`` by default (survives a
  killed process; a power cut may lose the last commits), ``synchronous="FULL"`` to survive that too.

Mirrors: k8s.io/apiserver pkg/storage/interfaces.go (Interface), in spirit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

__all__ = ["MemoryStorage", "SqliteStorage", "Storage", "StorageError"]


class StorageError(RuntimeError):
    """The backend could not load or commit (disk full, corrupt file)."""


class Storage(Protocol):
    """A durable key space with a global revision.

    Methods are synchronous and called from the server's event loop thread only.
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

    def close(self) -> None:
        pass


class SqliteStorage:
    """stdlib sqlite3 (WAL) file ``<path>``; tables ``objects(key, value)`` and ``meta``.

    Args:
        path: the database file (created with its parent directory when missing).
        synchronous: ``"NORMAL"`` (default) or ``"FULL"``.
    """

    def __init__(self, path: Path | str, *, synchronous: str = "NORMAL") -> None:
        if synchronous not in ("NORMAL", "FULL", "OFF"):
            raise ValueError(f"synchronous must be NORMAL, FULL or OFF, not {synchronous!r}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.execute("CREATE TABLE IF NOT EXISTS objects (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
            self._db.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('revision', 0)")
        except sqlite3.DatabaseError as e:
            raise StorageError(f"cannot open {self.path}: {e}") from e

    def load(self) -> tuple[int, list[tuple[str, bytes]]]:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE name='revision'").fetchone()
            rows = self._db.execute("SELECT key, value FROM objects ORDER BY key").fetchall()
        except sqlite3.DatabaseError as e:
            raise StorageError(f"cannot read {self.path}: {e}") from e
        return (int(row[0]) if row else 0), [(k, bytes(v)) for k, v in rows]

    def commit(self, revision: int, puts: Sequence[tuple[str, bytes]], deletes: Sequence[str]) -> None:
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

    def close(self) -> None:
        try:
            self._db.close()
        except sqlite3.Error:
            pass
