"""ReplicaSet scale up/down with the whole chain."""

from __future__ import annotations

from pumice.api.scheme import POD, REPLICA_SET

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


async def test_scaling_down_deletes_the_unscheduled_pod_first() -> None:
    from .conftest import chain

    async with chain(nodes=1, kubelet={"cpu": "2"}) as env:
        rs = replica_set("web", 3)
        rs["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
        await env.client.create(rs)

        async def two_running_one_pending() -> bool:
            pods = (await env.client.list(POD, "default")).items
            phases = sorted((p.get("status") or {}).get("phase", "Pending") for p in pods)
            return phases == ["Pending", "Running", "Running"]

        await eventually(two_running_one_pending, what="2 running, 1 unschedulable")
        pending = next(p["metadata"]["name"] for p in (await env.client.list(POD, "default")).items
                       if not p["spec"].get("nodeName"))
        await env.client.patch(REPLICA_SET, "web", {"spec": {"replicas": 2}}, "default")

        async def pending_gone() -> bool:
            names = {p["metadata"]["name"] for p in (await env.client.list(POD, "default")).items}
            return len(names) == 2 and pending not in names

        await eventually(pending_gone, what="the unscheduled pod was the one deleted")


async def test_orphan_pods_matching_the_selector_are_adopted(env: Env) -> None:
    await env.client.create({"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": "stray", "namespace": "default", "labels": {"rs": "web"}},
                             "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    await env.client.create(replica_set("web", 2))

    async def adopted() -> bool:
        pods = (await env.client.list(POD, "default")).items
        stray = next((p for p in pods if p["metadata"]["name"] == "stray"), None)
        return len(pods) == 2 and stray is not None and bool(stray["metadata"].get("ownerReferences"))

    await eventually(adopted, what="stray pod adopted, only one more created")
