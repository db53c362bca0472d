"""``pumice up --runtime simulated`` end to end for topology-aware gang preemption: a
high-priority gang bound to one rack evicts the low-priority Pods of one rack (never one in each)
through the live Volcano scheduler's ``gangpreempt`` action and then runs there. (No proportion
plugin: with the queue's capability used up its enqueue check would keep the gang Pending, and
gangpreempt, like upstream's, only helps admitted jobs.)"""

from __future__ import annotations

from pathlib import Path

from pumice.api import scheme
from pumice.client.kubeconfig import connect
from pumice.testing.node import wait_for
from pumice.testing.up import start_up, stop_up

CONF = """\
actions: "enqueue, allocate, backfill, gangpreempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: nodeorder
  - name: network-topology-aware
"""


def _hn(name: str, tier: int, members: list[tuple[str, str]]) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": t, "selector": {"exactMatch": {"name": m}}} for t, m in members]}}


def _vcjob(name: str, replicas: int, prio: str, topology: dict | None = None) -> dict:
    spec: dict = {"minAvailable": replicas, "schedulerName": "volcano", "priorityClassName": prio,
                  "tasks": [{"name": "w", "replicas": replicas, "template": {"spec": {"priorityClassName": prio, "containers": [
                      {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1500m"}}}]}}}]}
    if topology:
        spec["networkTopology"] = topology
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


async def test_a_rack_bound_gang_preempts_inside_one_rack_under_pumice_up_simulated(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(CONF)
    data = tmp_path / "data"
    data.mkdir()
    proc, up = start_up(data, "--runtime", "simulated", "--nodes", "4", "--node-cpu", "2", "--node-memory", "8Gi",
                        "--scheduler-conf", str(conf))
    try:
        client = connect(up.kubeconfig)

        async def four_nodes() -> bool:
            try:
                return len((await client.list(scheme.NODE)).items) == 4
            except Exception:
                return False

        await wait_for(four_nodes, timeout=120)
        names = sorted(n["metadata"]["name"] for n in (await client.list(scheme.NODE)).items)
        racks = {"rack0": names[:2], "rack1": names[2:]}
        for r, ns in racks.items():
            await client.create(_hn(r, 1, [("Node", n) for n in ns]))
        await client.create(_hn("spine", 2, [("HyperNode", r) for r in racks]))
        for name, value in (("low", 10), ("high", 1000)):
            await client.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value})
        for i in range(4):
            await client.create(_vcjob(f"lo{i}", 1, "low"))

        async def running(prefix: str, n: int) -> list[dict] | None:
            pods = [p for p in (await client.list(scheme.POD, "default")).items
                    if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName")
                    and (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]
            return pods if len(pods) >= n else None

        await wait_for(lambda: running("lo", 4), timeout=120)
        before = {p["metadata"]["uid"]: p["spec"]["nodeName"] for p in await running("lo", 4) or []}
        await client.create(_vcjob("hi", 2, "high", {"mode": "hard", "highestTierAllowed": 1}))
        await wait_for(lambda: running("hi-", 2), timeout=120)
        hi = await running("hi-", 2)
        assert hi is not None
        rack_of = {n: r for r, ns in racks.items() for n in ns}
        hi_racks = {rack_of[p["spec"]["nodeName"]] for p in hi}
        assert len(hi_racks) == 1, [p["spec"]["nodeName"] for p in hi]
        # the low-priority Pods of the gang's rack were evicted, those of the other rack were not
        alive = {p["metadata"]["uid"] for p in (await client.list(scheme.POD, "default")).items
                 if not p["metadata"].get("deletionTimestamp")}
        gone = {rack_of[n] for uid, n in before.items() if uid not in alive}
        kept = {rack_of[n] for uid, n in before.items() if uid in alive}
        assert gone == hi_racks and kept == set(racks) - hi_racks, (gone, kept, hi_racks)
    finally:
        stop_up(proc)
