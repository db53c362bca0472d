"""Test harness for the Volcano controllers (pumice.controllers.volcano): a scheme with the
Volcano kinds, a Manager running the controllers over any KubeClient, an ``eventually`` poller,
a stepped scheduler driver (one Volcano session through the API per call) and a minimal node
agent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pumice.api import scheme
from pumice.api.scheme import Scheme
from pumice.client.base import KubeClient
from pumice.controllers.volcano import setup
from pumice.runtime.manager import Manager
from pumice.testing.cluster import running
from pumice.testing.node import wait_for


def volcano_scheme() -> Scheme:
    """The built-in kinds plus Job, PodGroup, Queue and Command."""
    s = Scheme.builtin()
    for rk in (scheme.VCJOB, scheme.POD_GROUP, scheme.QUEUE, scheme.COMMAND):
        s.add(rk)
    return s


async def eventually(fn: Callable[[], Awaitable[Any] | Any], timeout: float = 5.0, interval: float = 0.005) -> Any:
    """Poll ``fn`` until it returns a truthy value (or an awaitable of one); returns it.
    :func:`pumice.testing.node.wait_for` with this module's shorter defaults.

    Raises:
        AssertionError: when ``timeout`` seconds of loop time pass first.
    """
    return await wait_for(fn, timeout=timeout, interval=interval)


@contextlib.asynccontextmanager
async def running_controllers(client: KubeClient, **options: Any) -> AsyncIterator[Manager]:
    """A Manager with the Volcano controllers, started; stopped on exit."""
    mgr = Manager(client)
    setup(mgr, **options)
    async with running(mgr):
        yield mgr


# a stepped scheduler driver and a minimal node agent, for end-to-end tests

def ready_node(name: str, *, cpu: str = "2", memory: str = "8Gi", pods: str = "110",
         labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Ready Node with the given allocatable (= capacity)."""
    alloc = {"cpu": cpu, "memory": memory, "pods": pods}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  **(labels or {})}},
            "spec": {},
            "status": {"capacity": dict(alloc), "allocatable": dict(alloc),
                       "conditions": [{"type": "Ready", "status": "True"}]}}


async def add_nodes(client: KubeClient, nodes: list[dict[str, Any]]) -> None:
    """Create Nodes and write their status (allocatable, Ready)."""
    for n in nodes:
        created = await client.create(n)
        created["status"] = n["status"]
        await client.update_status(created)


async def list_scheduling_objects(client: KubeClient) -> list[dict[str, Any]]:
    """Nodes, HyperNodes, Pods, PodGroups, Queues, PriorityClasses and Namespaces, with kind set."""
    kinds = (scheme.NAMESPACE, scheme.NODE, scheme.HYPER_NODE, scheme.PRIORITY_CLASS, scheme.QUEUE, scheme.POD_GROUP,
             scheme.POD)
    out: list[dict[str, Any]] = []
    for rk in kinds:
        for o in (await client.list(rk)).items:
            o.setdefault("apiVersion", rk.api_version)
            o.setdefault("kind", rk.kind)
            out.append(o)
    return out


_SESSIONS = 0


async def schedule_once(client: KubeClient, conf: Any) -> Any:
    """One Volcano scheduling cycle through the API: snapshot the objects, run the scheduler's
    session (:func:`pumice.scheduler.volcano.run_session`), then write what it decided: binds,
    evictions, changed PodGroup statuses, queue ``status.allocated``. Returns the SessionResult.

    A stepped stand-in for the live scheduler loop, so tests control when a cycle runs.
    """
    from pumice.scheduler.volcano import build_snapshot, run_session

    global _SESSIONS
    _SESSIONS += 1
    # each session needs its own uid: gang's Unschedulable condition carries it as transitionID,
    # and a PodGroup with Running Pods and a condition of *this* session is Unknown
    res = run_session(build_snapshot(await list_scheduling_objects(client)), conf,
                      uid=f"00000000-0000-4000-8000-{_SESSIONS:012d}")
    for key, node_name in sorted(res.binds.items()):
        ns, name = key.split("/", 1)
        with contextlib.suppress(Exception):
            await client.bind(ns, name, node_name)
    for key in sorted(res.evictions):
        ns, name = key.split("/", 1)
        with contextlib.suppress(Exception):
            await client.evict(ns, name)
    closed = res.close
    for key in sorted(closed.changed if closed is not None else []):
        ns, name = key.split("/", 1)
        with contextlib.suppress(Exception):
            await client.patch(scheme.POD_GROUP, name, {"status": res.pod_groups[key]}, ns)
    if closed is not None:
        for key, ann in sorted(closed.pod_group_annotations.items()):
            ns, name = key.split("/", 1)
            with contextlib.suppress(Exception):
                await client.patch(scheme.POD_GROUP, name, {"metadata": {"annotations": ann}}, ns)
        for q, alloc in sorted(closed.queue_allocated.items()):
            with contextlib.suppress(Exception):
                await client.patch(scheme.QUEUE, q, {"status": {"allocated": alloc or None}}, subresource="status")
    return res


class MiniKubelet:
    """A minimal node agent for tests: bound Pending Pods become Running (containers ready);
    Pods being deleted gracefully are removed; :meth:`finish` ends a Pod Succeeded or Failed.
    Polls every ``interval`` seconds."""

    def __init__(self, client: KubeClient, interval: float = 0.01) -> None:
        self.client = client
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    async def step(self) -> None:
        for p in (await self.client.list(scheme.POD)).items:
            md, spec, st = p["metadata"], p.get("spec") or {}, p.get("status") or {}
            if md.get("deletionTimestamp"):
                with contextlib.suppress(Exception):
                    await self.client.delete(scheme.POD, md["name"], md.get("namespace"), grace_period_seconds=0)
                continue
            if spec.get("nodeName") and (st.get("phase") or "Pending") == "Pending":
                cs = [{"name": c.get("name", ""), "ready": True, "restartCount": 0,
                       "state": {"running": {}}} for c in spec.get("containers") or []]
                with contextlib.suppress(Exception):
                    await self.client.patch(scheme.POD, md["name"], {"status": {
                        "phase": "Running", "containerStatuses": cs,
                        "conditions": [{"type": "Ready", "status": "True"}]}}, md.get("namespace"),
                        subresource="status")

    async def finish(self, name: str, namespace: str = "default", *, phase: str = "Succeeded",
                     exit_code: int = 0) -> None:
        p = await self.client.get(scheme.POD, name, namespace)
        cs = [{"name": c.get("name", ""), "ready": False, "restartCount": 0,
               "state": {"terminated": {"exitCode": exit_code}}} for c in (p.get("spec") or {}).get("containers") or []]
        await self.client.patch(scheme.POD, name, {"status": {"phase": phase, "containerStatuses": cs}}, namespace,
                                subresource="status")

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(Exception):
                await self.step()
            await asyncio.sleep(self.interval)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
