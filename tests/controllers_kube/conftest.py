"""The whole chain in-process: API server, kube controllers, default scheduler, fake kubelet."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pumice.api import Obj
from pumice.controllers.kube import KubeControllers, setup
from pumice.runtime import Manager
from pumice.scheduler.default.scheduler import DefaultScheduler
from pumice.testing.cluster import HttpServer, local_cluster, running, serve_http
from pumice.testing.fake_kubelet import FakeKubelet


@dataclass
class Env:
    cluster: Any
    client: Any
    kubelet: FakeKubelet
    scheduler: DefaultScheduler
    mgr: Manager | None = None
    kube: KubeControllers | None = None
    mgr_task: asyncio.Task[None] | None = None

    async def start_manager(self, **kw: Any) -> Manager:
        self.mgr = Manager(self.cluster.new_client(), graceful_shutdown_timeout=2.0)
        self.kube = setup(self.mgr, **kw)
        self.mgr_task = asyncio.create_task(self.mgr.start())
        await asyncio.wait_for(self.mgr.wait_started(), 30)
        return self.mgr

    async def stop_manager(self) -> None:
        if self.mgr is not None and self.mgr_task is not None:
            self.mgr.stop()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self.mgr_task, 30)
        self.mgr = None
        self.mgr_task = None


async def eventually(cond: Callable[[], Awaitable[bool] | bool], *, timeout: float = 20.0, what: str = "",
                     interval: float = 0.05) -> None:
    """Poll ``cond`` every ``interval`` seconds of loop time until true (virtual under looptime)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        out = cond()
        if asyncio.iscoroutine(out):
            out = await out
        if out:
            return
        if loop.time() > deadline:
            raise AssertionError(f"condition not met in {timeout} s: {what or cond}")
        await asyncio.sleep(interval)


@contextlib.asynccontextmanager
async def chain(*, nodes: int | list[str] = 3, manager: bool = True, kubelet: dict[str, Any] | None = None,
                **setup_kw: Any) -> AsyncIterator[Env]:
    """API server + fake kubelet + default scheduler (+ kube controllers when ``manager``)."""
    async with local_cluster(install_crds=False) as cluster:
        kl = FakeKubelet(cluster.new_client(), nodes=nodes, **(kubelet or {}))
        await kl.start()
        sched = DefaultScheduler(cluster.new_client())
        await sched.start()
        e = Env(cluster, cluster.client, kl, sched)
        if manager:
            await e.start_manager(**setup_kw)
        try:
            yield e
        finally:
            await e.stop_manager()
            await sched.stop()
            await kl.stop()


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with chain() as e:
        yield e


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[HttpServer, Any]]:
    """The chain behind the HTTPS server (for kubectl): yields the server and a client of it."""
    async with serve_http(tmp_path) as srv:
        clients = [srv.client() for _ in range(4)]
        kubelet = FakeKubelet(clients[0], nodes=2)
        await kubelet.start()
        sched = DefaultScheduler(clients[1])
        await sched.start()
        mgr = Manager(clients[2], graceful_shutdown_timeout=2.0)
        setup(mgr)
        try:
            async with running(mgr, start_timeout=30, stop_timeout=30):
                yield srv, clients[3]
        finally:
            await sched.stop()
            await kubelet.stop()
            for c in clients:
                await c.close()


def deployment(name: str, replicas: int, *, image: str = "nginx:1", max_unavailable: Any = None,
               max_surge: Any = None, strategy: str = "RollingUpdate", ns: str = "default") -> Obj:
    spec: Obj = {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "web", "image": image,
                                                       "resources": {"requests": {"cpu": "100m"}}}]}}}
    if strategy == "Recreate":
        spec["strategy"] = {"type": "Recreate"}
    elif max_unavailable is not None or max_surge is not None:
        ru: Obj = {}
        if max_unavailable is not None:
            ru["maxUnavailable"] = max_unavailable
        if max_surge is not None:
            ru["maxSurge"] = max_surge
        spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": ru}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def job(name: str, *, completions: int | None = 1, parallelism: int = 1, backoff_limit: int | None = None,
        restart_policy: str = "Never", ns: str = "default", **spec_extra: Any) -> Obj:
    spec: Obj = {"parallelism": parallelism,
                 "template": {"spec": {"restartPolicy": restart_policy,
                                       "containers": [{"name": "main", "image": "busybox",
                                                       "resources": {"requests": {"cpu": "100m"}}}]}}}
    if completions is not None:
        spec["completions"] = completions
    if backoff_limit is not None:
        spec["backoffLimit"] = backoff_limit
    spec.update(spec_extra)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns}, "spec": spec}
