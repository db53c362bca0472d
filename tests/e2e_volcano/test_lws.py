"""LeaderWorkerSet-style groups: Pods that already carry ``scheduling.k8s.io/group-name`` and a
PodGroup created by someone else (owned by the leader Pod, minMember = group size) are left alone
by the podgroup controller and gang-scheduled as one group.

Mirrors: volcano PR #4478 (pkg/controllers/podgroup skips Pods with a group name) and LWS's
volcano scheduler provider (``<lws>-<groupIndex>-<revisionHash>`` PodGroups).
"""

from __future__ import annotations

import asyncio
from typing import Any

from pumice.api import scheme
from pumice.scheduler.volcano import default_conf
from pumice.testing.volcano_controllers import add_nodes, eventually, ready_node, schedule_once

GROUP = "lws-sample-0-5c7d9f"


def lws_pod(name: str, *, leader: bool) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "annotations": {"scheduling.k8s.io/group-name": GROUP},
                         "labels": {"leaderworkerset.sigs.k8s.io/name": "lws-sample",
                                    "leaderworkerset.sigs.k8s.io/group-index": "0",
                                    "leaderworkerset.sigs.k8s.io/template-revision-hash": "5c7d9f",
                                    "leaderworkerset.sigs.k8s.io/worker-index": "0" if leader else name[-1]}},
            "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox",
                                                                  "resources": {"requests": {"cpu": "1"}}}]}}


async def _default_open(c: Any) -> bool:
    try:
        q = await c.get(scheme.QUEUE, "default")
    except Exception:
        return False
    return (q.get("status") or {}).get("state") == "Open"


async def test_lws_pods_with_a_group_name_keep_their_podgroup_and_run_as_one_gang(cluster: Any) -> None:
    c = cluster.client
    await add_nodes(c, [ready_node("n1", cpu="2"), ready_node("n2", cpu="2")])
    await eventually(lambda: _default_open(c))
    leader = await c.create(lws_pod("lws-sample-0", leader=True))
    await c.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": GROUP, "namespace": "default", "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Pod", "name": "lws-sample-0", "uid": leader["metadata"]["uid"],
                         "controller": True}]},
                    "spec": {"minMember": 4, "queue": "default", "minResources": {"cpu": "4"}}})
    for i in (1, 2, 3):
        await c.create(lws_pod(f"lws-sample-0-{i}", leader=False))
    conf = default_conf()
    for _ in range(4):
        await schedule_once(c, conf)
        await asyncio.sleep(0.05)

    async def all_bound() -> bool:
        pods = (await c.list(scheme.POD, "default")).items
        return len(pods) == 4 and all(p["spec"].get("nodeName") for p in pods)

    await eventually(all_bound, timeout=10)
    pgs = [pg["metadata"]["name"] for pg in (await c.list(scheme.POD_GROUP, "default")).items]
    assert pgs == [GROUP]
    pods = (await c.list(scheme.POD, "default")).items
    assert {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods} == {GROUP}


async def test_an_lws_gang_larger_than_the_cluster_binds_none(cluster: Any) -> None:
    c = cluster.client
    await add_nodes(c, [ready_node("n1", cpu="2")])
    await eventually(lambda: _default_open(c))
    leader = await c.create(lws_pod("lws-sample-0", leader=True))
    await c.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": GROUP, "namespace": "default", "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Pod", "name": "lws-sample-0", "uid": leader["metadata"]["uid"],
                         "controller": True}]},
                    "spec": {"minMember": 4, "queue": "default"}})
    for i in (1, 2, 3):
        await c.create(lws_pod(f"lws-sample-0-{i}", leader=False))
    conf = default_conf()
    for _ in range(3):
        await schedule_once(c, conf)
        await asyncio.sleep(0.05)
    pods = (await c.list(scheme.POD, "default")).items
    assert len(pods) == 4 and not any(p["spec"].get("nodeName") for p in pods)
    pg = await c.get(scheme.POD_GROUP, GROUP, "default")
    assert (pg.get("status") or {}).get("phase") in ("Pending", "Inqueue")
    assert [pg["metadata"]["name"] for pg in (await c.list(scheme.POD_GROUP, "default")).items] == [GROUP]
