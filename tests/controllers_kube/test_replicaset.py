"""ReplicaSet scale up/down with the whole chain."""

from __future__ import annotations

from pumice.controllers.kube.kinds import POD, REPLICA_SET

from .conftest import Env, eventually


def replica_set(name: str, replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"rs": name}},
                     "template": {"metadata": {"labels": {"rs": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


async def test_replicaset_creates_pods_that_get_scheduled_and_run(env: Env) -> None:
    await env.client.create(replica_set("web", 4))

    async def running() -> bool:
        pods = (await env.client.list(POD, "default")).items
        return len(pods) == 4 and all(p["status"].get("phase") == "Running" for p in pods)

    await eventually(running, what="4 running pods")
    async def ready() -> bool:
        rs = await env.client.get(REPLICA_SET, "web", "default")
        st = rs.get("status") or {}
        return st.get("readyReplicas") == 4 and st.get("availableReplicas") == 4 and st.get("fullyLabeledReplicas") == 4
    await eventually(ready, what="status")
