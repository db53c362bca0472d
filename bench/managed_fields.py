"""Field-ownership benchmark (managedFields Update tracking): prints figures (not a test).

The CPU one write costs through the in-process stack (client, ASGI app, registry, store, watch
fan-out to nobody) with kube-apiserver's Update-manager tracking on (the default) beside the same
writes with it off (``Registry.track_update_managers = False``, what ``pumice simulate`` uses),
in the same run, alternating rounds. Writes per Pod, as a node agent and a controller make them:
create (manager ``bench-create``), merge patch of a label (``bench-label``), three status patches
(``bench-kubelet``: Pending -> Running with conditions -> Succeeded), and a PUT of the whole
object (``bench-edit``); plus the pure ``update_managed_fields`` call for one status patch.

Usage: python bench/managed_fields.py [--pods N] [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from pumice.api.apply import update_managed_fields
from pumice.testing.cluster import local_cluster


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"],
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


def status(phase: str, ready: str) -> dict[str, Any]:
    conds = [{"type": t, "status": ready, "lastTransitionTime": "2026-01-01T00:00:00Z"}
             for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]
    return {"status": {"phase": phase, "conditions": conds, "hostIP": "10.0.0.1", "podIP": "10.244.0.5",
                       "containerStatuses": [{"name": "main", "ready": ready == "True", "restartCount": 0,
                                              "image": "busybox:1.36", "imageID": "", "started": ready == "True",
                                              "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}}


async def one_round(track: bool, pods: int, tag: str) -> tuple[float, int]:
    async with local_cluster() as c:
        c.server.registry.track_update_managers = track
        cl = c.client
        kind = c.scheme.by_api_version_kind("v1", "Pod")
        writes = 0
        t0 = time.process_time()
        for i in range(pods):
            name = f"p{tag}{i}"
            await cl.request("POST", kind.path("default"), body=pod(name), params={"fieldManager": "bench-create"})
            await cl.request("PATCH", kind.path("default", name), body={"metadata": {"labels": {"tier": "web"}}},
                             content_type="application/merge-patch+json", params={"fieldManager": "bench-label"})
            for phase, ready in (("Pending", "False"), ("Running", "True"), ("Succeeded", "False")):
                await cl.request("PATCH", kind.path("default", name, "status"), body=status(phase, ready),
                                 content_type="application/merge-patch+json", params={"fieldManager": "bench-kubelet"})
            got = await cl.request("GET", kind.path("default", name))
            got["metadata"]["annotations"] = {"edited": "yes"}
            await cl.request("PUT", kind.path("default", name), body=got, params={"fieldManager": "bench-edit"})
            writes += 6
        return time.process_time() - t0, writes


def pure_cost(n: int) -> float:
    old = pod("x")
    old["metadata"]["managedFields"] = []
    update_managed_fields(None, old, manager="bench-create", api_version="v1", kind="Pod", builtin=True,
                          time="2026-01-01T00:00:00Z", ignore=frozenset({"status"}))
    old.update(status("Pending", "False"))
    t0 = time.process_time()
    for _ in range(n):
        new = {**old, "status": status("Running", "True")["status"], "metadata": dict(old["metadata"])}
        update_managed_fields(old, new, manager="bench-kubelet", api_version="v1", kind="Pod", builtin=True,
                              time="2026-01-01T00:00:01Z", subresource="status")
    return (time.process_time() - t0) / n


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    on: list[float] = []
    off: list[float] = []
    for r in range(a.rounds):
        for track, out in ((False, off), (True, on)) if r % 2 else ((True, on), (False, off)):
            cpu, writes = await one_round(track, a.pods, f"{r}{int(track)}")
            out.append(cpu / writes * 1e6)
    m_on, m_off = statistics.median(on), statistics.median(off)
    print(f"writes per round: {a.pods * 6} ({a.pods} Pods x create, label patch, 3 status patches, PUT)")
    print(f"tracking on:  {m_on:7.1f} us CPU per write (rounds: {', '.join(f'{x:.1f}' for x in on)})")
    print(f"tracking off: {m_off:7.1f} us CPU per write (rounds: {', '.join(f'{x:.1f}' for x in off)}) [baseline]")
    print(f"ratio on/off: {m_on / m_off:.3f}  (+{m_on - m_off:.1f} us per write)")
    print(f"update_managed_fields alone, one Pod status patch: {pure_cost(2000) * 1e6:.1f} us")


if __name__ == "__main__":
    asyncio.run(main())
