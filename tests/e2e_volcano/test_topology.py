"""HyperNodes end to end on the in-process stack: admission, label discovery, nodeCount, and a
hard-topology vcjob placed inside one HyperNode with the allocated-HyperNode annotation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pumice.api import scheme
from pumice.client.base import ApiError
from pumice.controllers.volcano.hypernode import CONFIG_KEY, CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE
from pumice.scheduler.volcano.conf import build_conf
from pumice.testing.volcano_controllers import add_nodes, eventually, ready_node, schedule_once


def vcjob(name: str, *, replicas: int, min_available: int, cpu: str, **spec: Any) -> dict:
    s: dict = {"minAvailable": min_available, "schedulerName": "volcano", "tasks": [
        {"name": "worker", "replicas": replicas, "template": {"spec": {"restartPolicy": "OnFailure", "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}}], **spec}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": s}


async def job_pods(c: Any, job: str) -> list[dict]:
    items = (await c.client.list(scheme.POD, "default", label_selector=f"volcano.sh/job-name={job}")).items
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


async def pg_of(c: Any, job: str) -> dict | None:
    j = await c.client.get(scheme.VCJOB, job, "default")
    return await c.client.get(scheme.POD_GROUP, f"{job}-{j['metadata']['uid']}", "default")


CONF = build_conf(["enqueue", "allocate", "backfill"],
                  [["priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder", "network-topology-aware"]])
DISCOVERY = """\
networkTopologyDiscovery:
  - source: label
    enabled: true
    config:
      networkTopologyTypes:
        dc:
          - nodeLabel: example.com/spine
          - nodeLabel: example.com/rack
          - nodeLabel: kubernetes.io/hostname
"""


def hn(name: str, members: list[dict], tier: int = 1) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": members}}


async def test_the_api_refuses_a_hypernode_member_with_two_selectors_or_a_bad_regex(cluster: Any) -> None:
    both = {"type": "Node", "selector": {"exactMatch": {"name": "n1"}, "regexMatch": {"pattern": "n.*"}}}
    with pytest.raises(ApiError) as e:
        await cluster.client.create(hn("two", [both]))
    assert e.value.code == 422
    assert "Only one of ExactMatch, RegexMatch, or LabelMatch can be specified" in str(e.value)
    with pytest.raises(ApiError) as e:
        await cluster.client.create(hn("bad", [{"type": "Node", "selector": {"regexMatch": {"pattern": "n(["}}}]))
    assert 'admission webhook "validatehypernode.volcano.sh" denied the request' in str(e.value)
    # Go's regexp words (trial 12 F-6 e), not Python's "unterminated character set at position 2"
    assert "member regexMatch pattern is invalid: error parsing regexp: missing closing ]: `[`" in str(e.value)
    label_on_hn = {"type": "HyperNode", "selector": {"labelMatch": {"matchLabels": {"a": "b"}}}}
    with pytest.raises(ApiError) as e:
        await cluster.client.create(hn("lbl", [label_on_hn], tier=2))
    assert e.value.code == 422


async def test_label_discovery_builds_the_tree_and_a_hard_job_lands_in_one_rack(cluster: Any) -> None:
    c = cluster.client
    racks = {"n0": ("r0", "s0"), "n1": ("r0", "s0"), "n2": ("r1", "s0"), "n3": ("r1", "s0"),
             "n4": ("r2", "s1"), "n5": ("r2", "s1")}
    await add_nodes(c, [ready_node(n, cpu="2", labels={"example.com/rack": r, "example.com/spine": s})
                        for n, (r, s) in racks.items()])
    await c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CONFIG_MAP_NAMESPACE}})
    await c.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": CONFIG_MAP_NAME, "namespace": CONFIG_MAP_NAMESPACE}, "data": {CONFIG_KEY: DISCOVERY}})

    async def tree() -> dict[str, dict]:
        return {o["metadata"]["name"]: o for o in (await c.list(scheme.HYPER_NODE)).items}

    async def five_with_counts() -> bool:
        t = await tree()
        return len(t) == 5 and all((o.get("status") or {}).get("nodeCount") for o in t.values())

    await eventually(five_with_counts, timeout=10)
    t = await tree()
    tiers = sorted((o["spec"]["tier"], o["spec"]["tierName"], o["status"]["nodeCount"]) for o in t.values())
    assert tiers == [(1, "example.com/rack", 2), (1, "example.com/rack", 2), (1, "example.com/rack", 2),
                     (2, "example.com/spine", 2), (2, "example.com/spine", 4)]
    assert all(o["metadata"]["labels"]["volcano.sh/network-topology-source"] == "label" for o in t.values())
    rack_of = {o["metadata"]["labels"]["example.com/rack"]: n for n, o in t.items() if o["spec"]["tier"] == 1}

    job = vcjob("topo", replicas=2, min_available=2, cpu="2", networkTopology={"mode": "hard", "highestTierAllowed": 1})
    await c.create(job)

    async def placed() -> bool:
        await schedule_once(c, CONF)
        await asyncio.sleep(0.02)
        pods = await job_pods(cluster, "topo")
        return len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods)

    await eventually(placed, timeout=10)
    nodes = sorted(p["spec"]["nodeName"] for p in await job_pods(cluster, "topo"))
    assert nodes in (["n0", "n1"], ["n2", "n3"], ["n4", "n5"])
    pg = await pg_of(cluster, "topo")
    assert pg is not None and pg["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}
    assert pg["metadata"]["annotations"]["volcano.sh/job-allocated-hypernode"] == rack_of[racks[nodes[0]][0]]

    # relabelling a node moves it: its old rack shrinks, the discovery keeps names stable
    n5 = await c.get(scheme.NODE, "n5")
    n5["metadata"]["labels"]["example.com/rack"] = "r1"
    await c.update(n5)

    async def moved() -> bool:
        t2 = await tree()
        counts = {o["metadata"]["labels"].get("example.com/rack"): o["status"].get("nodeCount")
                  for o in t2.values() if o["spec"]["tier"] == 1}
        return counts.get("r1") == 3 and counts.get("r2") == 1
    await eventually(moved, timeout=10)
    assert {n for n, o in (await tree()).items() if o["spec"]["tier"] == 1} == set(rack_of.values())
