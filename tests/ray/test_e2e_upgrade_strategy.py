"""RayCluster ``upgradeStrategy: Recreate`` on real Ray: a template change replaces every Pod and
the cluster comes back ready with the new spec, Ray answering on the new head; a ``replicas``
change does not recreate anything. Marked ``ray_long`` (make test-ray-long)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pumice.api import Obj, scheme

from .test_e2e_ray import ray_nodes, small_cluster_spec, stack

pytestmark = [
    pytest.mark.ray,
    pytest.mark.ray_long,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not (Path(sys.executable).parent / "ray").exists(), reason="ray is not installed"),
]


async def test_recreate_replaces_every_pod_on_a_template_change_and_the_cluster_comes_back() -> None:
    async with stack() as s:
        spec = small_cluster_spec()
        spec["upgradeStrategy"] = {"type": "Recreate"}
        await s.client.create({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                               "metadata": {"name": "recreate", "namespace": "default"}, "spec": spec})

        async def get() -> Obj:
            return await s.client.get(scheme.RAY_CLUSTER, "recreate", "default")

        async def live() -> dict[str, Obj]:
            pods = (await s.client.list(scheme.POD, "default", label_selector="ray.io/cluster=recreate")).items
            return {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}

        async def ready_with(n: int) -> bool:
            try:
                return ((await get()).get("status") or {}).get("state") == "ready" and await ray_nodes(await get()) == n
            except Exception:
                return False

        await s.until("RayCluster recreate ready with 2 Ray nodes", lambda: ready_with(2))
        first = set(await live())
        cl = await get()
        cl["spec"]["workerGroupSpecs"][0]["replicas"] = 2
        await s.client.update(cl)
        await s.until("RayCluster recreate ready with 3 Ray nodes", lambda: ready_with(3))
        assert first < set(await live())  # a replicas change recreates nothing

        cl = await get()
        for t in (cl["spec"]["headGroupSpec"]["template"], cl["spec"]["workerGroupSpecs"][0]["template"]):
            t["spec"]["containers"][0].setdefault("env", []).append({"name": "RECREATE_MARK", "value": "2"})
        await s.client.update(cl)

        async def replaced() -> bool:
            pods = await live()
            return len(pods) == 3 and not (set(pods) & first) and all(
                {"name": "RECREATE_MARK", "value": "2"} in (p["spec"]["containers"][0].get("env") or [])
                for p in pods.values())
        await s.until("all 3 Pods replaced by Pods of the new template", replaced)
        await s.until("RayCluster recreate ready again with 3 Ray nodes", lambda: ready_with(3))
        events = [e for e in (await s.client.list(scheme.EVENT, "default")).items
                  if (e.get("involvedObject") or {}).get("name") == "recreate" and e.get("reason") == "DeletedPod"]
        assert any("due to spec change with Recreate upgradeStrategy" in e.get("message", "") for e in events)
