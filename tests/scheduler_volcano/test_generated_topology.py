"""Seeded generated scenarios for the topology half: HyperNode racks and spines, gangs with hard
network topology, vcjob-style partitions (``subGroupPolicy`` sub-groups with their own tier),
Pods with preferred anti-affinity and spread constraints, low-priority jobs to preempt and a
reclaimable queue to reclaim from; actions enqueue, allocate, backfill, gangpreempt,
gangreclaim.

Per-job outcomes (bound / pipelined / evicted of total) are pinned per seed; every seed runs
twice, on the vectorised and the plain path, and through the CLI (``run_both``), and the
invariants are checked for every seed: a gang binds all-or-nothing at minMember, every bound
partition sits in one leaf, every bound hard-topology job in one HyperNode of its tier, and no
node is over its allocatable.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from pumice.controllers.volcano.job.builders import sub_group_policy
from pumice.testing.volcano import Case, hypernode, node, pod, podgroup, priority_class, queue, run_case

from .conftest import run_both

TIERS = [["priority", "gang", "conformance"],
         ["drf", "predicates", "proportion", "nodeorder", "network-topology-aware"]]
ACTIONS = ["enqueue", "allocate", "backfill", "gangpreempt", "gangreclaim"]
HOST = "kubernetes.io/hostname"


def generate(seed: int) -> tuple[list[dict], dict[str, dict]]:
    """Objects, and per job: minMember, tier (or None), partition size (or 0), started."""
    rng = random.Random(seed)
    objs: list[dict] = [priority_class("low", 10), priority_class("high", 1000),
                        queue("qa", weight=1, reclaimable=True), queue("qb", weight=1)]
    leaves: dict[str, list[str]] = {}
    free: dict[str, int] = {}
    n = 0
    for leaf in range(4):
        names = []
        for _ in range(2):
            name = f"n{n}"
            n += 1
            objs.append(node(name, "4,16Gi,pods=20", labels={HOST: name}))
            free[name] = 4000
            names.append(name)
        leaves[f"leaf{leaf}"] = names
        objs.append(hypernode(f"leaf{leaf}", 1, nodes=names))
    objs += [hypernode("spine0", 2, hypernodes=["leaf0", "leaf1"]), hypernode("spine1", 2, hypernodes=["leaf2", "leaf3"])]
    meta: dict[str, dict] = {}
    # low-priority one-Pod jobs filling about two thirds of the nodes, to preempt and reclaim
    for f, spot in enumerate(x for x in free if rng.random() < 0.7):
        fq = rng.choice(["qa", "qb"])
        objs.append(podgroup(f"fill{f}", queue=fq, min_member=1, phase="Running", priority_class="low"))
        objs.append(pod(f"fill{f}-0", group=f"fill{f}", requests="4000m,1Gi", labels={"app": f"fill{f}"},
                        priority_class="low", priority=10, node=spot, phase="Running"))
        free[spot] = 0
        meta[f"c1/fill{f}"] = {"min": 1, "tier": None, "part": 0, "started": True, "size": 1}
    for j in range(rng.randint(4, 6)):
        name = f"j{j}"
        kind = rng.choice(["plain", "gang", "partitioned"])
        cpu = rng.choice([1000, 2000])
        q = rng.choice(["qa", "qb"])
        prio = rng.choice(["low", "high"])
        running = kind == "plain" and rng.random() < 0.7
        size = rng.randint(1, 3) if kind == "plain" else rng.randint(2, 4)
        part = 0
        tier: int | None = None
        spec: dict = {}
        groups: list[dict] = []
        if kind == "gang":
            tier = rng.choice([1, 2])
            spec = {"topology": "hard", "tier": tier}
        elif kind == "partitioned":
            part = 2
            size = part * rng.randint(1, 2)
            tier = 2
            spec = {"topology": "hard", "tier": 2}
            groups = [sub_group_policy({"name": "worker", "replicas": size, "partitionPolicy": {
                "totalPartitions": size // part, "partitionSize": part, "minPartitions": size // part,
                "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}})]
        min_member = size if kind != "plain" else rng.randint(1, size)
        places: list[str] = []
        if running:
            for _ in range(size):
                spot = next((x for x, f in free.items() if f >= cpu), None)
                if spot is None:
                    break
                free[spot] -= cpu
                places.append(spot)
            if len(places) < size:
                for x in places:
                    free[x] += cpu
                running, places = False, []
        objs.append(podgroup(name, queue=q, min_member=min_member, phase="Running" if running else "Inqueue",
                             priority_class=prio, sub_groups=groups, **spec))  # type: ignore[arg-type]
        spread = rng.random() < 0.3
        anti = rng.random() < 0.3
        for t in range(size):
            labels = {"app": name}
            if part:
                labels.update({"volcano.sh/task-spec": "worker", "volcano.sh/partition-id": str(t // part)})
            affinity = None
            if anti:
                affinity = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": HOST}}]}}
            p = pod(f"{name}-{t}", group=name, requests=f"{cpu}m,1Gi", labels=labels, priority_class=prio,
                    priority=1000 if prio == "high" else 10, affinity=affinity,
                    node=places[t] if running else "", phase="Running" if running else "Pending")
            if spread:
                p["spec"]["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway",
                                                           "labelSelector": {"matchLabels": {"app": name}}}]
            objs.append(p)
        meta[f"c1/{name}"] = {"min": min_member, "tier": tier, "part": part, "started": running, "size": size}
    return objs, meta


def outcome(objs: list[dict], out: dict) -> dict[str, str]:
    job_of = {f"c1/{o['metadata']['name']}": f"c1/{o['metadata']['annotations']['scheduling.k8s.io/group-name']}"
              for o in objs if o["kind"] == "Pod"}
    bound = Counter(job_of[k] for k in out["binds"])
    piped = Counter(job_of[k] for k in out["pipelined"])
    evicted = Counter(job_of[k] for k in out["evictions"])
    total = Counter(job_of.values())
    return {j: f"+{bound[j]} ~{piped[j]} -{evicted[j]} of {total[j]}" for j in sorted(total)}


def check_invariants(objs: list[dict], meta: dict[str, dict], out: dict) -> None:
    leaf_of: dict[str, str] = {}
    spine_of: dict[str, str] = {}
    for o in objs:
        if o["kind"] == "HyperNode" and o["spec"]["tier"] == 1:
            for m in o["spec"]["members"]:
                leaf_of[m["selector"]["exactMatch"]["name"]] = o["metadata"]["name"]
    for leaf in leaf_of.values():
        spine_of[leaf] = "spine0" if leaf in ("leaf0", "leaf1") else "spine1"
    placed: dict[str, dict[str, str]] = {}
    for key, where in {**out["binds"], **out["pipelined"]}.items():
        job = key.rsplit("-", 1)[0]
        placed.setdefault(job, {})[key] = where
    for job, m in meta.items():
        got = {k: v for k, v in out["binds"].items() if k.rsplit("-", 1)[0] == job}
        if not m["started"]:
            assert not got or len(got) >= m["min"], f"{job}: {len(got)} bound, minMember {m['min']}"
        where = placed.get(job, {})
        if m["tier"] == 1 and where:
            assert len({leaf_of[n] for n in where.values()}) == 1, (job, where)
        if m["tier"] == 2 and where:
            assert len({spine_of[leaf_of[n]] for n in where.values()}) == 1, (job, where)
        if m["part"] and where:
            for pid in range(m["size"] // m["part"]):
                nodes = {where[k] for k in where if int(k.rsplit("-", 1)[1]) // m["part"] == pid}
                assert len({leaf_of[n] for n in nodes}) <= 1, (job, pid, where)
    load: Counter[str] = Counter()
    req = {f"c1/{o['metadata']['name']}": int(o["spec"]["containers"][0]["resources"]["requests"]["cpu"].rstrip("m"))
           for o in objs if o["kind"] == "Pod"}
    evicted = set(out["evictions"])
    for o in objs:
        if o["kind"] == "Pod" and o["spec"].get("nodeName") and f"c1/{o['metadata']['name']}" not in evicted:
            load[o["spec"]["nodeName"]] += req[f"c1/{o['metadata']['name']}"]
    for k, where in out["binds"].items():
        load[where] += req[k]
    assert all(v <= 4000 for v in load.values()), load


PINNED: dict[int, dict[str, str]] = {1: {'c1/fill0': '+0 ~0 -0 of 1',
     'c1/fill1': '+0 ~0 -0 of 1',
     'c1/fill2': '+0 ~0 -0 of 1',
     'c1/fill3': '+0 ~0 -1 of 1',
     'c1/fill4': '+0 ~0 -1 of 1',
     'c1/j0': '+0 ~0 -0 of 3',
     'c1/j1': '+0 ~3 -0 of 3',
     'c1/j2': '+2 ~0 -0 of 2',
     'c1/j3': '+0 ~0 -3 of 3',
     'c1/j4': '+0 ~4 -0 of 4',
     'c1/j5': '+4 ~0 -0 of 4'},
 3: {'c1/fill0': '+0 ~0 -1 of 1',
     'c1/fill1': '+0 ~0 -1 of 1',
     'c1/fill2': '+0 ~0 -0 of 1',
     'c1/fill3': '+0 ~0 -1 of 1',
     'c1/fill4': '+0 ~0 -1 of 1',
     'c1/fill5': '+0 ~0 -0 of 1',
     'c1/fill6': '+0 ~0 -0 of 1',
     'c1/fill7': '+0 ~0 -1 of 1',
     'c1/j0': '+0 ~0 -0 of 2',
     'c1/j1': '+0 ~3 -0 of 3',
     'c1/j2': '+0 ~2 -0 of 2',
     'c1/j3': '+0 ~4 -0 of 4'},
 5: {'c1/fill0': '+0 ~0 -0 of 1',
     'c1/fill1': '+0 ~0 -0 of 1',
     'c1/fill2': '+0 ~0 -0 of 1',
     'c1/j0': '+0 ~0 -0 of 1',
     'c1/j1': '+2 ~0 -0 of 2',
     'c1/j2': '+1 ~0 -0 of 1',
     'c1/j3': '+4 ~0 -0 of 4'},
 9: {'c1/fill0': '+0 ~0 -1 of 1',
     'c1/fill1': '+0 ~0 -0 of 1',
     'c1/fill2': '+0 ~0 -0 of 1',
     'c1/fill3': '+0 ~0 -0 of 1',
     'c1/fill4': '+0 ~0 -0 of 1',
     'c1/j0': '+2 ~0 -0 of 2',
     'c1/j1': '+2 ~0 -0 of 2',
     'c1/j2': '+3 ~0 -0 of 3',
     'c1/j3': '+0 ~4 -0 of 4',
     'c1/j4': '+0 ~2 -0 of 2',
     'c1/j5': '+0 ~0 -1 of 3'},
 13: {'c1/fill0': '+0 ~0 -0 of 1',
      'c1/fill1': '+0 ~0 -1 of 1',
      'c1/fill2': '+0 ~0 -1 of 1',
      'c1/fill3': '+0 ~0 -1 of 1',
      'c1/fill4': '+0 ~0 -1 of 1',
      'c1/j0': '+2 ~0 -0 of 2',
      'c1/j1': '+0 ~4 -0 of 4',
      'c1/j2': '+0 ~4 -0 of 4',
      'c1/j3': '+2 ~0 -0 of 2',
      'c1/j4': '+3 ~0 -0 of 3',
      'c1/j5': '+0 ~0 -0 of 4'},
 25: {'c1/fill0': '+0 ~0 -1 of 1',
      'c1/fill1': '+0 ~0 -1 of 1',
      'c1/fill2': '+0 ~0 -1 of 1',
      'c1/fill3': '+0 ~0 -0 of 1',
      'c1/fill4': '+0 ~0 -0 of 1',
      'c1/fill5': '+0 ~0 -1 of 1',
      'c1/j0': '+0 ~4 -0 of 4',
      'c1/j1': '+2 ~0 -0 of 2',
      'c1/j2': '+0 ~0 -0 of 1',
      'c1/j3': '+4 ~0 -0 of 4',
      'c1/j4': '+0 ~2 -0 of 2',
      'c1/j5': '+0 ~2 -0 of 2'}}


@pytest.mark.parametrize("seed", sorted(PINNED))
def test_generated_topology_scenarios(seed: int, tmp_path: Path) -> None:
    objs, meta = generate(seed)
    case = Case(f"generated topology seed {seed}", objs, ACTIONS, TIERS)
    out = run_case(case)
    run_both(case, tmp_path)
    check_invariants(objs, meta, out)
    assert outcome(objs, out) == PINNED[seed]
