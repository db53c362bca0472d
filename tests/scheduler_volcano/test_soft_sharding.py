"""Soft sharding in the batch scheduler (upstream ``--scheduler-sharding-mode soft``): every Node
is usable, this scheduler's NodeShard's Nodes are preferred. Allocate ranks idle-in-shard, idle
elsewhere, future-idle-in-shard, future-idle elsewhere (upstream allocate prioritizeNodes);
backfill, preempt and reclaim try the shard's Nodes first (GetPredicatedNodeByShard). Each case
runs twice on both the vectorised and the plain path and must agree."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.scheduler.volcano.cache.snapshot import SessionResult, build_snapshot, run_session
from pumice.scheduler.volcano.conf import build_conf
from pumice.testing.volcano import node, pod, podgroup, queue

TIERS = [["priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder", "binpack"]]


def run(objs: list[dict[str, Any]], shard: set[str] | None, actions: list[str]) -> SessionResult:
    results = []
    for vectorize in (True, False, True):
        snap = build_snapshot(objs)
        snap.nodes_in_shard = shard
        results.append(run_session(snap, build_conf(actions, TIERS), vectorize=vectorize))
    assert all((r.binds, r.pipelined, sorted(r.evictions)) == (results[0].binds, results[0].pipelined, sorted(results[0].evictions))
               for r in results), "not deterministic, or the two paths disagree"
    return results[0]


def nodes(*specs: tuple[str, str]) -> list[dict[str, Any]]:
    return [node(n, cap) for n, cap in specs]


def job(name: str, n: int, requests: str = "1,1Gi", **kw: Any) -> list[dict[str, Any]]:
    return [podgroup(name, queue="q1", min_member=n), *(pod(f"{name}-{i}", group=name, requests=requests, **kw) for i in range(n))]


# binpack would put the Pod on the fuller n0; the shard (n2) wins over the score
BASE = [*nodes(("n0", "4,16Gi,pods=10"), ("n1", "4,16Gi,pods=10"), ("n2", "4,16Gi,pods=10")), queue("q1"),
        podgroup("busy", queue="q1", min_member=1, phase="Running"),
        pod("busy-0", group="busy", requests="2,1Gi", node="n0", phase="Running")]


def test_without_a_shard_the_score_decides() -> None:
    assert run([*BASE, *job("a", 1)], None, ["enqueue", "allocate"]).binds == {"c1/a-0": "n0"}


def test_soft_sharding_prefers_the_shards_node_over_a_better_scored_one() -> None:
    assert run([*BASE, *job("a", 1)], {"n2"}, ["enqueue", "allocate"]).binds == {"c1/a-0": "n2"}


def test_when_the_shard_is_full_the_other_nodes_are_used() -> None:
    res = run([*BASE, *job("a", 6)], {"n2"}, ["enqueue", "allocate"])
    placed = sorted(res.binds.values())
    assert placed.count("n2") == 4 and len(placed) == 6  # the shard first, 2 more outside


def test_idle_room_elsewhere_comes_before_releasing_room_in_the_shard() -> None:
    objs = [*nodes(("n0", "4,16Gi,pods=10"), ("n1", "4,16Gi,pods=10")), queue("q1"),
            podgroup("old", queue="q1", min_member=1, phase="Running"),
            pod("old-0", group="old", requests="4,1Gi", node="n1", phase="Running", deleting=True), *job("a", 1)]
    res = run(objs, {"n1"}, ["enqueue", "allocate"])
    assert res.binds == {"c1/a-0": "n0"} and res.pipelined == {}


def test_backfill_puts_a_best_effort_pod_in_the_shard() -> None:
    objs = [*BASE, podgroup("be", queue="q1", min_member=1), pod("be-0", group="be", requests=None)]
    assert run(objs, None, ["enqueue", "allocate", "backfill"]).binds == {"c1/be-0": "n1"}
    assert run(objs, {"n2"}, ["enqueue", "allocate", "backfill"]).binds == {"c1/be-0": "n2"}


@pytest.mark.parametrize(("shard", "victim_node"), [(None, "n0"), ({"n1"}, "n1")])
def test_preempt_evicts_on_the_shards_node_first(shard: set[str] | None, victim_node: str) -> None:
    from pumice.testing.volcano import priority_class

    objs = [*nodes(("n0", "2,16Gi,pods=10"), ("n1", "2,16Gi,pods=10")), queue("q1"),
            priority_class("low", 1), priority_class("high", 100),
            podgroup("low", queue="q1", min_member=1, phase="Running", priority_class="low"),
            pod("low-0", group="low", requests="2,1Gi", node="n0", phase="Running", priority=1),
            pod("low-1", group="low", requests="2,1Gi", node="n1", phase="Running", priority=1),
            podgroup("high", queue="q1", min_member=1, priority_class="high"),
            pod("high-0", group="high", requests="2,1Gi", priority=100)]
    res = run(objs, shard, ["enqueue", "allocate", "preempt"])
    assert res.evictions == [f"c1/low-{victim_node[-1]}"]
