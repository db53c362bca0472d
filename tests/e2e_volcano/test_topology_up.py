"""``pumice up --runtime simulated`` end to end: HyperNodes, a hard-topology vcjob and a
partitioned vcjob (each partition inside one rack) through the real API server (HTTPS), the
controller-manager, the live Volcano scheduler and simulated Nodes."""

from __future__ import annotations

from pathlib import Path

from pumice.api import scheme
from pumice.client.kubeconfig import connect
from pumice.testing.node import wait_for
from pumice.testing.up import start_up, stop_up

CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: network-topology-aware
"""



def _hn(name: str, tier: int, members: list[tuple[str, str]]) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": t, "selector": {"exactMatch": {"name": m}}} for t, m in members]}}


async def test_a_hard_topology_vcjob_runs_inside_one_rack_under_pumice_up_simulated(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(CONF)
    data = tmp_path / "data"
    data.mkdir()
    proc, up = start_up(data, "--runtime", "simulated", "--nodes", "6", "--node-cpu", "2", "--node-memory", "8Gi",
                        "--scheduler-conf", str(conf))
    try:
        client = connect(up.kubeconfig)

        async def six_nodes() -> bool:
            try:
                return len((await client.list(scheme.NODE)).items) == 6
            except Exception:
                return False

        await wait_for(six_nodes, timeout=120)
        names = sorted(n["metadata"]["name"] for n in (await client.list(scheme.NODE)).items)
        racks = {f"rack{i}": names[2 * i:2 * i + 2] for i in range(3)}
        for r, ns in racks.items():
            await client.create(_hn(r, 1, [("Node", n) for n in ns]))
        await client.create(_hn("spine", 2, [("HyperNode", r) for r in racks]))
        job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "topo", "namespace": "default"},
               "spec": {"minAvailable": 2, "schedulerName": "volcano",
                        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
                        "tasks": [{"name": "worker", "replicas": 2, "template": {"spec": {"containers": [
                            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1500m"}}}]}}}]}}
        await client.create(job)

        async def placed() -> list[dict] | None:
            pods = [p for p in (await client.list(scheme.POD, "default", label_selector="volcano.sh/job-name=topo")).items
                    if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") == "Running"]
            return pods if len(pods) == 2 else None

        await wait_for(placed, timeout=120)
        pods = await placed()
        assert pods is not None
        nodes = sorted(p["spec"]["nodeName"] for p in pods)
        rack = next(r for r, ns in racks.items() if nodes == ns)

        async def annotated() -> bool:
            pgs = (await client.list(scheme.POD_GROUP, "default")).items
            return any((pg["metadata"].get("annotations") or {}).get("volcano.sh/job-allocated-hypernode") == rack for pg in pgs)

        await wait_for(annotated, timeout=60)
        counts = {o["metadata"]["name"]: (o.get("status") or {}).get("nodeCount") for o in (await client.list(scheme.HYPER_NODE)).items}
        assert counts == {"rack0": 2, "rack1": 2, "rack2": 2, "spine": 6}

        # two partitions of two 1.5-cpu Pods, each partition bound to one rack (tier 1), the job
        # to the spine: each partition takes one of the two free racks whole.
        parted = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "parted", "namespace": "default"},
                  "spec": {"minAvailable": 4, "schedulerName": "volcano",
                           "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
                           "tasks": [{"name": "worker", "replicas": 4,
                                      "partitionPolicy": {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 2,
                                                          "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
                                      "template": {"spec": {"containers": [
                                          {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1500m"}}}]}}}]}}
        await client.create(parted)

        async def parted_placed() -> list[dict] | None:
            pods = [p for p in (await client.list(scheme.POD, "default", label_selector="volcano.sh/job-name=parted")).items
                    if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") == "Running"]
            return pods if len(pods) == 4 else None

        await wait_for(parted_placed, timeout=120)
        got = await parted_placed()
        assert got is not None
        rack_of = {n: r for r, ns in racks.items() for n in ns}
        by_partition: dict[str, set[str]] = {}
        for p in got:
            by_partition.setdefault(p["metadata"]["labels"]["volcano.sh/partition-id"], set()).add(rack_of[p["spec"]["nodeName"]])
        assert sorted(by_partition) == ["0", "1"] and all(len(v) == 1 for v in by_partition.values()), by_partition
        used = {next(iter(v)) for v in by_partition.values()}
        assert len(used) == 2 and rack not in used, (by_partition, rack)
    finally:
        stop_up(proc)
