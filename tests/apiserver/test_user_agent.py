"""Each component names itself in the User-Agent header (issue 13 item 5), on the in-process path
and over HTTPS, so that audit logs and request logs tell the scheduler from the controller manager."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from pumice.apiserver.server import APIServer
from pumice.client.kube import component_user_agent
from pumice.client.kubeconfig import connect, in_process
from pumice.testing.cluster import local_cluster


class RecordingApp:
    """Wraps an ASGI app and records the User-Agent of each HTTP request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen.append(dict(scope["headers"]).get(b"user-agent", b"").decode())
        await self.app(scope, receive, send)


def test_component_user_agent_is_shaped_like_client_gos() -> None:
    ua = component_user_agent("volcano-scheduler")
    name, _, platform = ua.partition(" ")
    assert name.startswith("pumice-volcano-scheduler/v")
    assert platform.startswith("(") and "/" in platform


async def test_in_process_requests_and_watches_carry_the_components_user_agent() -> None:
    async with local_cluster(install_crds=False) as c:
        app = RecordingApp(c.server.app)
        client = in_process(app, scheme=c.server.scheme, user_agent=component_user_agent("scheduler"))
        ns = client.scheme.by_api_version_kind("v1", "Namespace")
        assert ns is not None
        await client.list(ns)
        async for _ in client.watch(ns, None, timeout_seconds=1):
            break
        await client.close()
        assert app.seen and set(app.seen) == {component_user_agent("scheduler")}


async def test_https_requests_carry_the_components_user_agent(tmp_path: Path) -> None:
    server = APIServer(tmp_path, install_crds=False)
    app = server.app = RecordingApp(server.app)
    ready = asyncio.Event()
    task = asyncio.create_task(server.serve("127.0.0.1", 0, ready=ready))
    try:
        await asyncio.wait_for(ready.wait(), 30)
        client = connect(tmp_path / "kubeconfig", user_agent=component_user_agent("controller-manager"))
        await client.request("GET", "/api")
        await client.close()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        server.close()
    assert app.seen == [component_user_agent("controller-manager")]
