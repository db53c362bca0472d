"""Test helpers for the node agent.

The in-memory API for node-agent tests is :class:`~pumice.testing.fake_client.FakeClient` with
``graceful_pod_deletion=True`` (a bound, non-terminal Pod gets ``deletionTimestamp`` +
``deletionGracePeriodSeconds`` and stays until deleted with grace 0, as from the API server). Use ``pumice.testing.cluster.local_cluster()`` for the real server.

Builders: :func:`pod` makes a bound Pod with one or more shell containers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from pumice._util.clock import Clock
from pumice.api import Obj
from pumice.client.base import ApiError
from pumice.testing.fake_client import FakeClient


def pod(name: str, *commands: str | list[str], node: str = "node-0", namespace: str = "default",
        image: str = "busybox", restart_policy: str = "Never", annotations: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None, requests: str | None = None, grace: int | None = None,
        **container_fields: Any) -> Obj:
    """A bound Pod. Each command is a shell string (run with ``/bin/sh -c``) or an argv list; one
    container ``c0``, ``c1``... per command. ``requests``: ``"cpu,memory"`` (e.g. ``"500m,64Mi"``).
    Extra keyword fields go into every container (``readinessProbe=...``, ``env=[...]``)."""
    containers = []
    for i, cmd in enumerate(commands or ("sleep 3600",)):
        c: Obj = {"name": f"c{i}", "image": image,
                  "command": ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)}
        if requests:
            cpu, _, mem = requests.partition(",")
            c["resources"] = {"requests": {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v}}
        c.update(container_fields)
        containers.append(c)
    spec: Obj = {"nodeName": node, "restartPolicy": restart_policy, "containers": containers}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {}),
                     "annotations": dict(annotations or {})},
        "spec": spec,
    }


async def wait_for(fn: Any, timeout: float = 20.0, interval: float = 0.05) -> Any:
    """Poll ``fn`` (sync or async, no arguments) until it returns a truthy value; raises
    AssertionError with the last value after ``timeout`` seconds of loop time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        last = fn()
        if asyncio.iscoroutine(last):
            last = await last
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last value: {last!r})")


async def get_pod(client: Any, name: str, namespace: str = "default") -> Obj | None:
    """The Pod, or None when it does not exist."""
    pods = client.scheme.by_api_version_kind("v1", "Pod")
    try:
        out: Obj = await client.get(pods, name, namespace)
        return out
    except ApiError:
        return None


async def pod_phase(client: Any, name: str, namespace: str = "default") -> str:
    p = await get_pod(client, name, namespace)
    return "" if p is None else str((p.get("status") or {}).get("phase", ""))


async def phase_is(client: Any, name: str, phase: str, namespace: str = "default") -> bool:
    return await pod_phase(client, name, namespace) == phase


async def simulated_scale(nodes: int, pods: int, *, seed: int = 0, duration: float = 30.0,
                          lease_renew_interval: float | None = 10.0, clock: Clock | None = None) -> dict[str, Any]:
    """Run ``pods`` short Pods over ``nodes`` simulated Nodes in one agent (call under looptime for
    virtual time). Pods are created bound round-robin, each running ``duration`` plus 0-30 s
    (``pumice.io/sim-duration-seconds``); every 10th exits 1 (``pumice.io/sim-exit-code``).

    Returns:
        ``{"succeeded", "failed", "virtual_seconds", "writes", "order"}`` where ``order`` is a
        digest of the sequence of terminal Pods (equal across runs with the same seed).
    """
    import hashlib

    from pumice._util.clock import LoopClock
    from pumice.node.agent import NodeAgent

    clock = clock or LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = NodeAgent(client, runtime="simulated", data_dir="/nonexistent", nodes=nodes, node_cpu="64",
                      node_memory="256Gi", clock=clock, seed=seed, sim_start_latency=1.0, sim_start_jitter=2.0,
                      lease_renew_interval=lease_renew_interval)
    await agent.start()
    pods_kind = client.scheme.by_api_version_kind("v1", "Pod")
    assert pods_kind is not None
    done: list[str] = []
    failed = 0
    t0 = clock.monotonic()

    async def watch_terminal() -> None:
        nonlocal failed
        async for ev in client.watch(pods_kind, None):
            phase = (ev.object.get("status") or {}).get("phase")
            if ev.type == "MODIFIED" and phase in ("Succeeded", "Failed"):
                name = ev.object["metadata"]["name"]
                if name not in seen:
                    seen.add(name)
                    # Loop times are whole microseconds under looptime; the difference carries
                    # float noise, which rounding to 3 decimals exposes at a .xxx5 boundary.
                    done.append(f"{name}@{round(clock.monotonic() - t0, 6):.6f}")
                    failed += phase == "Failed"
                    if len(seen) == pods:
                        return

    seen: set[str] = set()
    watcher = asyncio.get_running_loop().create_task(watch_terminal())
    node_names = list(agent.nodes)
    for i in range(pods):
        p = pod(f"p{i:06d}", node=node_names[i % nodes], requests="100m,64Mi", annotations={
            "pumice.io/sim-duration-seconds": str(duration + (i * 7919 % 31)),
            "pumice.io/sim-exit-code": "1" if i % 10 == 9 else "0"})
        p["spec"]["containers"][0].pop("command")
        await client.create(p)
    await watcher
    virtual = clock.monotonic() - t0
    await agent.stop()
    await client.close()
    digest = hashlib.sha256("\n".join(done).encode()).hexdigest()[:16]
    return {"succeeded": len(done) - failed, "failed": failed, "virtual_seconds": virtual,
            "writes": client.resource_version, "order": digest}
