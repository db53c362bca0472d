"""``pumice scheduler`` as its own process, wired to the API server only by a kubeconfig."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from pumice.testing.cluster import serve_http

from .builders import node, pod

POD_KIND = ("v1", "Pod")


async def test_scheduler_process_binds_a_pod_and_stops_on_sigterm(tmp_path: Path) -> None:
    async with serve_http(tmp_path) as srv:
        client = srv.client()
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "pumice.cli.main", "scheduler", "--kubeconfig", str(srv.kubeconfig),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env)
        try:
            await client.create(node("n1", cpu="2"))
            p = pod("web", cpu="500m")
            p["metadata"].pop("uid")
            await client.create(p)
            kind = client.scheme.by_api_version_kind(*POD_KIND)
            assert kind is not None
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while True:
                got = await client.get(kind, "web", "default")
                if got["spec"].get("nodeName"):
                    break
                assert loop.time() < deadline, "pod not bound by the scheduler process"
                await asyncio.sleep(0.2)
            assert got["spec"]["nodeName"] == "n1"
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            out, _ = await asyncio.wait_for(proc.communicate(), 30)
            await client.close()
        assert proc.returncode == 0, out.decode()
