"""proportion: ported from volcano pkg/scheduler/plugins/proportion/proportion_test.go."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.scheduler.volcano.cache.snapshot import build_snapshot
from pumice.scheduler.volcano.conf import build_conf
from pumice.scheduler.volcano.framework import RecordingCache, open_session
from pumice.testing.volcano import Case, node, plugin, pod, podgroup, queue

from .conftest import run_both, upstream_params

ORIGIN = "volcano pkg/scheduler/plugins/proportion/proportion_test.go"

ALL_ENABLE = [[plugin("proportion", enabledAllocatable=True, enabledOverused=True, enableJobEnqueued=True)]]
ENQUEUEABLE = [[plugin("proportion", enabledAllocatable=False, enabledOverused=False, enableJobEnqueued=True)]]
ALLOCATABLE = [[plugin("proportion", enabledAllocatable=True, enabledOverused=False, enableJobEnqueued=False)]]

NODES = [node("n1", "2,2G,pods=10"), node("n2", "2,2G,pods=10")]
P1 = pod("pod1", namespace="ns1", group="pg1", requests="1,2G", node="n1", phase="Running")
P2 = pod("pod2", namespace="ns1", group="pg2", requests="2,1G", node="n2", phase="Running")
PG1 = podgroup("pg1", namespace="ns1", queue="q1", min_member=1, phase="Running", min_resources="1,2G")
PG2 = podgroup("pg2", namespace="ns1", queue="q2", min_member=1, phase="Running", min_resources="2,1G")
Q1 = queue("q1", capability="2,2G")
Q2 = queue("q2", capability="3,3G")


def _pending(i: int, q: str, req: str) -> list:
    return [
        pod(f"pod{i}", namespace="ns1", group=f"pg{i}", requests=req),
        podgroup(f"pg{i}", namespace="ns1", queue=q, min_member=1, phase="Pending", min_resources=req),
    ]


def ea(name: str, objects: list, tiers: list, binds: dict) -> Case:
    return Case(name, objects, ["enqueue", "allocate"], tiers, binds=binds)


CASES = [
    ea(
        "case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
        [*NODES, P1, P2, PG1, PG2, *_pending(3, "q1", "1,0G"), Q1, Q2],
        ALL_ENABLE,
        {"ns1/pod3": "n1"},
    ),
    ea(
        "case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
        [*NODES, P1, P2, PG1, PG2, *_pending(4, "q2", "0,1G"), Q1, Q2],
        ALL_ENABLE,
        {"ns1/pod4": "n2"},
    ),
    ea(
        "case2: exceed capacity, can not enqueue",
        [*NODES, P1, P2, PG1, PG2, *_pending(5, "q1", "1,1G"), Q1, Q2],
        ENQUEUEABLE,
        {},
    ),
    ea(
        "case3: exceed deserved, can not allocate",
        [*NODES, P1, P2, PG1, PG2, *_pending(5, "q1", "1,1G"), Q1, Q2],
        ALLOCATABLE,
        {},
    ),
    ea(
        "case4: queue with  non-open state, can not enqueue",
        [*NODES, *_pending(6, "q3", "1,1G"), queue("q3", capability="3,3G", state="Closed")],
        ENQUEUEABLE,
        {},
    ),
    Case(
        "case0: Pods are assigned according to the order of Queue Priority in which PGs are placed",
        [
            node("n1", "2,4Gi,pods=10"),
            node("n2", "2,4Gi,pods=10"),
            pod("p1", namespace="ns1", group="pg1", requests="2,4Gi", node="n1", phase="Running"),
            pod("p2", namespace="ns1", group="pg2", requests="2,4Gi"),
            pod("p3", namespace="ns1", group="pg3", requests="2,4Gi"),
            podgroup("pg1", namespace="ns1", queue="q1", min_member=1, phase="Running"),
            podgroup("pg2", namespace="ns1", queue="q2", min_member=1),
            podgroup("pg3", namespace="ns1", queue="q3", min_member=1),
            queue("q1", priority=5, capability="2,4Gi"),
            queue("q2", priority=1, capability="2,4Gi"),
            queue("q3", priority=10, capability="2,4Gi"),
        ],
        ["allocate", "reclaim"],
        [[plugin("proportion", enableQueueOrder=True)]],
        binds={"ns1/p3": "n2"},
    ),
]


@pytest.mark.parametrize("case", upstream_params(ORIGIN, CASES))
def test_proportion_upstream_case(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def test_deserved_is_water_filled_by_weight_and_capped_by_request() -> None:
    objs = [node("n1", "5,5G,pods=10"), queue("q-1"), queue("q-2")]
    objs += [podgroup("pg1", queue="q-1"), podgroup("pg2", queue="q-2")]
    objs += [pod("a1", group="pg1", requests="1500m,1500M"), pod("a2", group="pg1", requests="1500m,1500M")]
    objs += [pod("b1", group="pg2", requests="3,2G")]
    ssn = open_session(build_snapshot(objs), build_conf(["allocate"], [["proportion"]]), RecordingCache())
    attrs = ssn.plugins["proportion"].queue_opts  # type: ignore[attr-defined]
    assert (attrs["q-1"].deserved.milli_cpu, attrs["q-1"].deserved.memory, attrs["q-1"].deserved.get("pods")) == (2500, 3e9, 2)
    assert (attrs["q-2"].deserved.milli_cpu, attrs["q-2"].deserved.memory, attrs["q-2"].deserved.get("pods")) == (2500, 2e9, 1)


def test_queue_caps_are_given_again_only_for_the_very_same_objects(monkeypatch) -> None:
    import math

    from pumice.scheduler.volcano.api.queue_info import QueueInfo
    from pumice.scheduler.volcano.api.resource import Resource
    from pumice.scheduler.volcano.plugins import proportion
    from pumice.scheduler.volcano.plugins._fair_share import real_capability

    monkeypatch.setattr(proportion, "_LAST_CAPS", [])
    total = Resource(8000, 8e9)
    qs = {"a": QueueInfo("a", "a", capability=Resource(2000, 0)), "b": QueueInfo("b", "b", guarantee=Resource(1000, 1e9))}

    def fresh(total: Resource, qs: dict[str, QueueInfo]) -> dict[str, object]:
        g = Resource(1000, 1e9)
        return {"a": (Resource(2000, math.inf), Resource(), real_capability(total, g, Resource(), Resource(2000, math.inf))),
                "b": (None, qs["b"].guarantee, real_capability(total, g, qs["b"].guarantee, None))}

    first = proportion.queue_caps(total, qs)
    assert first == fresh(total, qs)
    assert proportion.queue_caps(total, dict(qs)) is first
    # stale cases: another guarantee object, another total, another queue set
    qs["b"] = QueueInfo("b", "b", guarantee=Resource(3000, 1e9))
    second = proportion.queue_caps(total, qs)
    assert second is not first and second["b"][2] == real_capability(total, Resource(3000, 1e9), Resource(3000, 1e9), None)
    assert second["a"][2] == Resource(2000, 7e9)
    third = proportion.queue_caps(Resource(8000, 8e9), qs)
    assert third is not second and third == second
    del qs["b"]
    assert proportion.queue_caps(total, qs) == {"a": (Resource(2000, math.inf), Resource(), Resource(2000, 8e9))}
