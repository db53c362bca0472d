"""Crash safety: SIGKILL the server process while clients write; every acknowledged write survives
and resourceVersions keep increasing after the restart on the same data dir."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from pumice.client.base import ApiError
from pumice.client.kubeconfig import connect


def start_server(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "apiserver", "--data-dir", str(data_dir),
                             "--port", "0", "--no-crds"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise AssertionError(f"server did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc, line.rsplit(" ", 1)[-1].strip()


async def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    proc, _ = start_server(tmp_path)
    acked: dict[str, int] = {}
    client = connect(tmp_path / "kubeconfig")
    cms = client.scheme.by_api_version_kind("v1", "ConfigMap")
    assert cms is not None

    async def writer(w: int) -> None:
        i = 0
        while True:
            name = f"w{w}-{i}"
            try:
                obj = await client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": name, "namespace": "default"}, "data": {"i": str(i)}})
            except (ApiError, OSError, Exception):
                return
            acked[name] = int(obj["metadata"]["resourceVersion"])
            i += 1

    tasks = [asyncio.create_task(writer(w)) for w in range(4)]
    while len(acked) < 200:
        await asyncio.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    await asyncio.wait(tasks, timeout=30)
    with contextlib.suppress(Exception):
        await client.close()
    assert len(acked) >= 200

    proc2, _ = start_server(tmp_path)
    try:
        client2 = connect(tmp_path / "kubeconfig")
        listed = await client2.list(cms, "default")
        stored = {o["metadata"]["name"]: int(o["metadata"]["resourceVersion"]) for o in listed.items}
        missing = sorted(set(acked) - set(stored))
        assert missing == []
        assert all(stored[n] == rv for n, rv in acked.items())
        new = await client2.create({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "after", "namespace": "default"}})
        assert int(new["metadata"]["resourceVersion"]) > max(acked.values())
        assert int(listed.resource_version) >= max(acked.values())
        await client2.close()
    finally:
        proc2.terminate()
        proc2.wait(10)
