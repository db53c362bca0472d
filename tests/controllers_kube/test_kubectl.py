"""``kubectl rollout status`` completes against the HTTP server while the chain rolls out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pumice.api.scheme import DEPLOYMENT
from pumice.testing.cluster import HttpServer
from pumice.testing.kubectl import run_kubectl

from .conftest import deployment

pytestmark = pytest.mark.kubectl


async def kubectl(kubeconfig: Path, *args: str, timeout: float = 90) -> tuple[int, str]:
    """``(exit code, stdout and stderr interleaved)`` of real kubectl against ``kubeconfig``."""
    code, out, _ = await run_kubectl(kubeconfig, *args, timeout=timeout, merge_stderr=True)
    return code, out


async def test_kubectl_rollout_status_completes(cluster: tuple[HttpServer, Any]) -> None:
    srv, client = cluster
    await client.create(deployment("web", 3, max_unavailable=0))
    code, out = await kubectl(srv.kubeconfig, "rollout", "status", "deployment/web", "--timeout=60s")
    assert code == 0, out
    assert 'deployment "web" successfully rolled out' in out
    await client.patch(DEPLOYMENT, "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": "nginx:2", "resources": {"requests": {"cpu": "100m"}}}]}}}}, "default")
    code, out = await kubectl(srv.kubeconfig, "rollout", "status", "deployment/web", "--timeout=60s")
    assert code == 0, out
    assert 'deployment "web" successfully rolled out' in out
    code, out = await kubectl(srv.kubeconfig, "rollout", "history", "deployment/web")
    assert code == 0, out
    assert "1" in out and "2" in out
