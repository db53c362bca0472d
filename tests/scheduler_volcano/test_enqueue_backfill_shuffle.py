"""enqueue, backfill and shuffle: ported from volcano pkg/scheduler/actions/{enqueue,backfill,
shuffle}/*_test.go."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pumice.scheduler.volcano.actions.backfill import BackfillAction as Backfill
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.cache.snapshot import build_snapshot
from pumice.scheduler.volcano.conf import build_conf
from pumice.scheduler.volcano.framework import RecordingCache, Statement, open_session
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.plugins import PLUGINS, PluginFactory
from pumice.testing.volcano import Case, node, plugin, pod, podgroup, priority_class, queue

from .conftest import run_both, upstream_params

ENQUEUE_TIERS = [
    [
        plugin("drf", enableJobOrder=True, enableJobEnqueued=True),
        plugin("proportion", enableQueueOrder=True, enableJobEnqueued=True),
        plugin("sla", {"sla-waiting-time": "3m"}, enableJobOrder=True, enableJobEnqueued=True),
        plugin("gang", enableJobOrder=True),
    ]
]


def _enq(name: str, objects: list, phases: dict) -> Case:
    return Case(name, objects, ["enqueue"], ENQUEUE_TIERS, phases=phases)


ENQUEUE_CASES = [
    _enq(
        "when podgroup status is inqueue",
        [
            podgroup("pg1", queue="c1", min_member=2),
            pod("p1", group="pg1", requests="1,1G"),
            pod("p2", group="pg1", requests="1,1G"),
            queue("c1", capability="4,4G"),
            queue("c2", capability="4,4G"),
        ],
        {"c1/pg1": "Inqueue"},
    ),
    _enq(
        "when podgroup status is pending",
        [
            podgroup("pg1", queue="c1", min_member=1, phase="Pending"),
            podgroup("pg2", queue="c2", min_member=1, phase="Pending"),
            pod("p1", group="pg1", requests="3,1G"),
            pod("p2", group="pg2", requests="1,1G"),
            queue("c1", capability="4,4G"),
            queue("c2", capability="4,4G"),
        ],
        {"c1/pg1": "Inqueue", "c1/pg2": "Inqueue"},
    ),
    _enq(
        "when podgroup status is running",
        [
            podgroup("pg1", queue="c1", min_member=2, phase="Running"),
            pod("p1", group="pg1", requests="1,1G", phase="Running"),
            pod("p2", group="pg1", requests="1,1G", phase="Running"),
            queue("c1", capability="4,4G"),
        ],
        {"c1/pg1": "Running"},
    ),
    _enq(
        "pggroup cannot enqueue because the specified queue is c1, but there is only c2",
        [podgroup("pg1", queue="c1", phase="Pending"), queue("c2", capability="4,4G")],
        {},
    ),
    _enq(
        "pggroup cannot enqueue because queue resources are less than podgroup MinResources",
        [podgroup("pg1", queue="c1", min_member=1, min_resources="8,8G", phase="Pending"), queue("c1", capability="1,1G")],
        {"c1/pg1": "Pending"},
    ),
]


@pytest.mark.parametrize("case", upstream_params('volcano pkg/scheduler/actions/enqueue/enqueue_test.go', ENQUEUE_CASES))
def test_enqueue_upstream_case(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def test_pod_group_missing_from_snapshot_when_its_queue_does_not_exist() -> None:
    snap = build_snapshot([podgroup("pg1", queue="c1", phase="Pending"), queue("c2")])
    assert snap.jobs == {}


@pytest.mark.upstream("volcano pkg/scheduler/actions/backfill/backfill_test.go: TestPickUpPendingTasks test")
def test_backfill_picks_best_effort_tasks_by_job_then_task_priority_and_unpipelines_them() -> None:
    objs: list = [priority_class("job-priority-1", 1), priority_class("job-priority-2", 2), queue("q1")]
    objs.append(podgroup("pg1", namespace="default", queue="q1", min_member=1, min_task_member={"": 3}, priority_class="job-priority-1"))
    objs.append(podgroup("pg2", namespace="default", queue="q1", min_member=1, min_task_member={"": 3}, priority_class="job-priority-2"))
    objs.append(node("node1", "100,100Gi,pods=100"))
    for g in ("pg1", "pg2"):
        for i in (1, 2, 3, 4):
            objs.append(pod(f"{g}-besteffort-task-{i}", namespace="default", group=g, priority=i))
            objs.append(pod(f"{g}-unbesteffort-task-{i}", namespace="default", group=g, requests={"cpu": "500m"}, priority=i))
    conf = build_conf(["backfill"], [[plugin("priority", enablePreemptable=True, enableTaskOrder=True, enableJobOrder=True), plugin("drf", enableQueueOrder=True)]])
    ssn = open_session(build_snapshot(objs), conf, RecordingCache())
    for g in ("pg1", "pg2"):
        job = ssn.jobs[f"default/{g}"]
        for t in list(job.tasks.values()):
            if t.name.endswith(("-2", "-4")):
                Statement(ssn).pipeline(t, "node1", False)
    names = [t.name for t in Backfill(Backfill.parse_arguments({})).pick_up_tasks(ssn)]
    assert names == [
        "pg2-besteffort-task-4",
        "pg2-besteffort-task-3",
        "pg2-besteffort-task-2",
        "pg2-besteffort-task-1",
        "pg1-besteffort-task-4",
        "pg1-besteffort-task-3",
        "pg1-besteffort-task-2",
        "pg1-besteffort-task-1",
    ]


def test_backfill_binds_best_effort_pods_that_allocate_skips() -> None:
    from pumice.testing.volcano import run_scenario

    objs = [queue("c1"), node("n1", "1,1Gi,pods=10"), podgroup("pg1", min_member=1), pod("be", group="pg1")]
    res = run_scenario(objs, actions=["allocate", "backfill"], tiers=[["gang", "predicates"]])
    assert res.binds == {"c1/be": "n1"}


class _LowPriorityVictims:
    """The upstream shuffle test's fake plugin: every task with priority 10 is a victim."""

    name = "fake-low-priority-victims"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_victim_tasks_fns(self.name, lambda tasks: [t for t in tasks if t.priority == 10])

    def on_session_close(self, ssn: Session) -> None:
        pass


if _LowPriorityVictims.name not in PLUGINS:
    PLUGINS.register(_LowPriorityVictims.name, PluginFactory(_LowPriorityVictims.name, dict, _LowPriorityVictims))


@pytest.mark.upstream("volcano pkg/scheduler/actions/shuffle/shuffle_test.go: select pods with low priority and evict them")
def test_shuffle_evicts_the_victims_plugins_select(tmp_path: Path) -> None:
    objs = [
        node("node1", "4,8Gi,pods=10"),
        node("node2", "4,8Gi,pods=10"),
        queue("default"),
        podgroup("pg1", namespace="test", queue="default", phase="Running"),
        podgroup("pg2", namespace="test", queue="default", phase="Running"),
        podgroup("pg3", namespace="test", queue="default", phase="Running"),
    ]
    for name, n, prio, g in [
        ("pod1-1", "node1", 10, "pg1"),
        ("pod1-2", "node1", 100, "pg1"),
        ("pod1-3", "node1", 100, "pg1"),
        ("pod2-1", "node1", 10, "pg2"),
        ("pod2-2", "node2", 100, "pg2"),
        ("pod3-1", "node2", 10, "pg3"),
        ("pod3-2", "node2", 100, "pg3"),
    ]:
        objs.append(pod(name, namespace="test", group=g, node=n, phase="Running", requests="1,2G", priority=prio))
    case = Case(
        "select pods with low priority and evict them",
        objs,
        ["shuffle"],
        [[plugin(_LowPriorityVictims.name, enabledVictim=True)]],
        evictions=["test/pod1-1", "test/pod2-1", "test/pod3-1"],
    )
    run_both(case, tmp_path)


def test_task_info_for_unknown_pod_phase_is_unknown() -> None:
    t = TaskInfo.from_pod(pod("x", phase="Weird"))
    assert str(t.status) == "Unknown"
