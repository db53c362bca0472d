"""``kubectl rollout status`` completes against the HTTP server while the chain rolls out."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from pathlib import Path

import pytest

from pumice.api.scheme import DEPLOYMENT
from pumice.controllers.kube import setup
from pumice.runtime import Manager
from pumice.scheduler.default.scheduler import DefaultScheduler
from pumice.testing.cluster import serve_http
from pumice.testing.fake_kubelet import FakeKubelet

from .conftest import deployment

pytestmark = pytest.mark.kubectl


async def kubectl(kubeconfig: Path, *args: str, timeout: float = 90) -> tuple[int, str]:
    exe = shutil.which("kubectl")
    if exe is None:
        pytest.skip("kubectl is not installed")
    proc = await asyncio.create_subprocess_exec(exe, "--kubeconfig", str(kubeconfig), *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode or 0, out.decode()


async def test_kubectl_rollout_status_completes(tmp_path: Path) -> None:
    async with serve_http(tmp_path) as srv:
        clients = [srv.client() for _ in range(4)]
        kubelet = FakeKubelet(clients[0], nodes=2)
        await kubelet.start()
        sched = DefaultScheduler(clients[1])
        await sched.start()
        mgr = Manager(clients[2], graceful_shutdown_timeout=2.0)
        setup(mgr)
        task = asyncio.create_task(mgr.start())
        try:
            await asyncio.wait_for(mgr.wait_started(), 30)
            await clients[3].create(deployment("web", 3, max_unavailable=0))
            code, out = await kubectl(srv.kubeconfig, "rollout", "status", "deployment/web", "--timeout=60s")
            assert code == 0, out
            assert 'deployment "web" successfully rolled out' in out
            await clients[3].patch(DEPLOYMENT, "web", {"spec": {"template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:2", "resources": {"requests": {"cpu": "100m"}}}]}}}}, "default")
            code, out = await kubectl(srv.kubeconfig, "rollout", "status", "deployment/web", "--timeout=60s")
            assert code == 0, out
            assert 'deployment "web" successfully rolled out' in out
            code, out = await kubectl(srv.kubeconfig, "rollout", "history", "deployment/web")
            assert code == 0, out
            assert "1" in out and "2" in out
        finally:
            mgr.stop()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 30)
            await sched.stop()
            await kubelet.stop()
            for c in clients:
                await c.close()
