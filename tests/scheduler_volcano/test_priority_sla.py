"""priority (ported from volcano pkg/scheduler/plugins/priority/priority_test.go TestPreempt)
and sla."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice._util.clock import FakeClock, parse_rfc3339
from pumice.scheduler.volcano.cache.snapshot import build_snapshot
from pumice.scheduler.volcano.conf import build_conf
from pumice.scheduler.volcano.framework import RecordingCache, open_session
from pumice.scheduler.volcano.plugins.sla import parse_go_duration
from pumice.testing.volcano import CREATED, Case, node, plugin, pod, podgroup, priority_class, queue

from .conftest import run_both, upstream_params

ORIGIN = "volcano pkg/scheduler/plugins/priority/priority_test.go"
ENABLE = plugin("priority", enableTaskOrder=True, enableJobOrder=True, enablePreemptable=True, enableReclaimable=True, enableJobStarving=True)
DISABLE = plugin("priority", enableTaskOrder=True, enableJobOrder=True, enablePreemptable=False, enableReclaimable=False, enableJobStarving=True)
PCS = [priority_class("low-priority", 100), priority_class("high-priority", 1000)]

CASES = [
    Case(
        "enable preempt low priority: enablePreemptable:true",
        [
            *PCS,
            podgroup("pg1", namespace="ns1", queue="q1", min_member=1, min_task_member={}, priority_class="low-priority"),
            podgroup("pg2", namespace="ns2", queue="q1", min_member=1, min_task_member={}, priority_class="high-priority"),
            pod("preemptee1", namespace="ns1", group="pg1", requests="3,3G", node="node1", phase="Running", preemptable=True),
            pod("preemptee2", namespace="ns1", group="pg1", requests="3,3G", node="node1", phase="Running", preemptable=True, priority=1000),
            pod("preemptor1", namespace="ns2", group="pg2", requests="3,3G"),
            node("node1", "6,6G,pods=10"),
            node("node2", "2,2G,pods=10"),
            queue("q1", capability="6,6G"),
        ],
        ["allocate", "preempt"],
        [[ENABLE]],
        evictions=["ns1/preemptee1"],
        pipelined={"ns2/pg2": ["node1"]},
    ),
    Case(
        "disable preempt low priority: enablePreemptable:false",
        [
            *PCS,
            podgroup("pg1", namespace="ns1", queue="q1", min_member=1, min_task_member={}, priority_class="low-priority"),
            podgroup("pg2", namespace="ns2", queue="q1", min_member=1, min_task_member={}, priority_class="high-priority"),
            pod("preemptee1", namespace="ns1", group="pg1", requests="3,3G", node="node1", phase="Running", preemptable=True),
            pod("preemptee2", namespace="ns1", group="pg1", requests="3,3G", node="node2", phase="Running", preemptable=False),
            pod("preemptor1", namespace="ns2", group="pg2", requests="3,3G"),
            node("node1", "3,3G,pods=10"),
            node("node2", "3,3G,pods=10"),
            queue("q1", capability="6,6G"),
        ],
        ["allocate", "preempt"],
        [[DISABLE]],
        evictions=[],
        binds={},
    ),
]


@pytest.mark.parametrize("case", upstream_params(ORIGIN, CASES))
def test_priority_upstream_case(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def test_go_durations_parse_as_upstream() -> None:
    assert parse_go_duration("3m") == 180
    assert parse_go_duration("1h30m") == 5400
    assert parse_go_duration("1.5s") == 1.5
    with pytest.raises(ValueError):
        parse_go_duration("3 minutes")


def _sla_session(now_offset: float):
    objs = [
        queue("c1"),
        podgroup("waits", min_member=1, min_resources="100,100Gi", phase="Pending", annotations={"volcano.sh/sla-waiting-time": "10m"}),
        podgroup("plain", min_member=1, min_resources="1,1Gi", phase="Pending"),
        node("n1", "2,4Gi,pods=10"),
    ]
    clock = FakeClock(parse_rfc3339(CREATED) + now_offset)
    conf = build_conf(["enqueue"], [[plugin("sla", enableJobOrder=True, enableJobEnqueued=True)], [plugin("overcommit", enableJobEnqueued=True)]])
    return open_session(build_snapshot(objs, clock=clock), conf, RecordingCache())


def test_sla_orders_jobs_with_a_waiting_time_first() -> None:
    ssn = _sla_session(0)
    assert ssn.job_order_fn(ssn.jobs["c1/waits"], ssn.jobs["c1/plain"])


def test_overdue_sla_permits_enqueue_before_a_later_tier_rejects() -> None:
    before = _sla_session(60)
    assert before.job_enqueueable(before.jobs["c1/waits"]) is False
    after = _sla_session(601)
    assert after.job_enqueueable(after.jobs["c1/waits"]) is True
