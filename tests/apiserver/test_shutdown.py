"""Stopping ``pumice apiserver`` (SIGTERM) while clients watch (trial-10 F-16): the watches end as
on a normal timeout and nothing is logged as an error. It printed one "Exception in ASGI
application" traceback (CancelledError) per open watch: the serve task's cancel reached uvicorn
mid-response, and the process exited with the streams still open."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from pumice.api.scheme import CONFIG_MAP, NODE, POD
from pumice.client.kubeconfig import connect
from pumice.testing.up import start_up, stop_up


async def test_sigterm_with_open_watches_ends_them_quietly(tmp_path: Path) -> None:
    log = tmp_path / "api.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "apiserver", "--data-dir", str(tmp_path / "d"),
                                 "--port", "0", "--no-crds"], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while "listening on" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            await asyncio.sleep(0.1)
        client = connect(tmp_path / "d" / "kubeconfig")
        ended: list[str] = []

        async def watch(kind: object) -> None:
            async for _ in client.watch(kind):  # type: ignore[arg-type]
                pass
            ended.append(str(getattr(kind, "plural", "")))

        watches = [asyncio.create_task(watch(k)) for k in (POD, NODE, CONFIG_MAP) for _ in range(3)]
        await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}})
        await asyncio.sleep(1)
        proc.send_signal(signal.SIGTERM)
        done, _ = await asyncio.wait(watches, timeout=30)
        assert await asyncio.to_thread(proc.wait, 30) == 0
        assert len(done) == len(watches) and all(t.exception() is None for t in done)
        assert sorted(ended) == sorted(["pods", "nodes", "configmaps"] * 3)
        text = log.read_text()
        assert "Traceback" not in text and "Exception in ASGI application" not in text, text
        await client.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_stopping_pumice_up_ends_the_dashboards_live_streams_quietly(tmp_path: Path, sig: int) -> None:
    """The dashboard's event stream (``/events``) waits for the next change; on a stop it waited
    until uvicorn's graceful-shutdown timeout cancelled it: one "Exception in ASGI application"
    traceback per open page. It ends when the dashboard stops."""
    proc, up = await asyncio.to_thread(start_up, tmp_path, "--runtime", "simulated")
    try:
        async with httpx2.AsyncClient(base_url=up.url, timeout=60) as web:
            assert (await web.post("/login", data={"token": up.token})).status_code == 303
            received: list[bytes] = []

            async def follow(path: str) -> None:
                async with web.stream("GET", path) as r:
                    assert r.status_code == 200
                    async for chunk in r.aiter_bytes():
                        received.append(chunk)

            streams = [asyncio.create_task(follow("/events?kinds=pods,nodes")) for _ in range(3)]
            while len(received) < 3:  # each stream sent its ": connected"
                await asyncio.sleep(0.1)
            proc.send_signal(sig)
            done, _ = await asyncio.wait(streams, timeout=30)
            assert len(done) == len(streams) and all(t.exception() is None for t in done)
        assert await asyncio.to_thread(proc.wait, 60) == 0
        text = (tmp_path / "up.log").read_text()
        assert "Traceback" not in text and "Exception in ASGI application" not in text, text[-3000:]
    finally:
        await asyncio.to_thread(stop_up, proc)
