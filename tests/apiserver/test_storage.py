"""Durable storage: SQLite keeps every acknowledged write across restarts."""

from __future__ import annotations

from pathlib import Path

from pumice.apiserver.storage import MemoryStorage, SqliteStorage
from pumice.testing.cluster import local_cluster

from .builders import configmap


def test_sqlite_commit_and_reload(tmp_path: Path) -> None:
    s = SqliteStorage(tmp_path / "db")
    s.commit(1, [("/configmaps/default/a", b"{}")], ())
    s.commit(2, [("/configmaps/default/b", b"{}")], ["/configmaps/default/a"])
    s.close()
    rev, rows = SqliteStorage(tmp_path / "db").load()
    assert rev == 2 and [k for k, _ in rows] == ["/configmaps/default/b"]


async def test_server_restart_on_same_data_dir_keeps_objects(tmp_path: Path) -> None:
    async with local_cluster(data_dir=tmp_path, install_crds=False) as c:
        cm = await c.client.create(configmap("a", data={"k": "v"}))
        rv = int(cm["metadata"]["resourceVersion"])
    async with local_cluster(data_dir=tmp_path, install_crds=False) as c:
        cms = c.scheme.by_api_version_kind("v1", "ConfigMap")
        got = await c.client.get(cms, "a", "default")
        assert got["data"] == {"k": "v"}
        nxt = await c.client.create(configmap("b"))
        assert int(nxt["metadata"]["resourceVersion"]) > rv


async def test_memory_storage_instance_survives_restart() -> None:
    storage = MemoryStorage()
    async with local_cluster(storage=storage, install_crds=False) as c:
        await c.client.create(configmap("a"))
    async with local_cluster(storage=storage, install_crds=False) as c:
        cms = c.scheme.by_api_version_kind("v1", "ConfigMap")
        assert (await c.client.get(cms, "a", "default"))["metadata"]["name"] == "a"
