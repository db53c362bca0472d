"""predicates, binpack, overcommit and gang: ported from volcano
pkg/scheduler/plugins/{predicates,binpack,overcommit,gang}/*_test.go."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.cache.snapshot import build_snapshot
from pumice.scheduler.volcano.conf import PluginOption, build_conf
from pumice.scheduler.volcano.framework import RecordingCache, open_session
from pumice.scheduler.volcano.plugins import PLUGINS
from pumice.scheduler.volcano.plugins.binpack import BinpackPlugin
from pumice.scheduler.volcano.plugins.gang import _skip_for_releasing
from pumice.testing.volcano import Case, node, plugin, pod, podgroup, priority_class, queue, run_scenario

from .conftest import run_both, upstream_params

WORKER_ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchExpressions": [{"key": "role", "operator": "In", "values": ["worker"]}]},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}
PRED_ORIGIN = "volcano pkg/scheduler/plugins/predicates/predicates_test.go"

PREDICATE_CASES = [
    Case(
        "TestEventHandler pod-deallocate",
        [
            pod("worker-1", namespace="ns1", group="pg1", requests="3,3k", labels={"role": "worker"}, node_selector={"selector": "worker"}, affinity=WORKER_ANTI_AFFINITY),
            pod("worker-2", namespace="ns1", group="pg1", requests="5,5k", labels={"role": "worker"}, affinity=WORKER_ANTI_AFFINITY),
            pod("worker-3", namespace="ns1", group="pg2", requests="4,4k", labels={"role": "worker"}, affinity=WORKER_ANTI_AFFINITY),
            node("node1", "14,14k,pods=10", labels={"selector": "worker", "kubernetes.io/hostname": "node1"}),
            node("node2", "3,3k,pods=10", labels={"kubernetes.io/hostname": "node2"}),
            priority_class("p1", 1),
            priority_class("p2", 2),
            podgroup("pg1", namespace="ns1", queue="q1", min_member=2, priority_class="p2"),
            podgroup("pg2", namespace="ns1", queue="q1", min_member=1, priority_class="p1"),
            queue("q1", weight=0),
        ],
        ["allocate"],
        [[plugin("predicates", enablePredicate=True), plugin("gang", enableJobReady=True, enableJobPipelined=True), plugin("priority", enableJobOrder=True)]],
        binds={"ns1/worker-3": "node1"},
    ),
    Case(
        "TestNodeNum pod-predicate",
        [
            pod("worker-1", namespace="ns1", group="pg1", labels={"role": "worker"}, node_selector={"selector": "worker"}),
            pod("worker-2", namespace="ns1", group="pg1", labels={"role": "worker"}),
            pod("worker-3", namespace="ns1", group="pg2", labels={"role": "worker"}),
            node("node1", "4,4k,pods=2", labels={"selector": "worker"}),
            priority_class("p1", 1),
            priority_class("p2", 2),
            podgroup("pg1", namespace="ns1", queue="q1", min_member=2, priority_class="p2"),
            podgroup("pg2", namespace="ns1", queue="q1", min_member=1, priority_class="p1"),
            queue("q1", weight=0),
        ],
        ["allocate", "backfill"],
        [[plugin("predicates", enablePredicate=True)]],
        binds={"ns1/worker-1": "node1", "ns1/worker-2": "node1"},
    ),
]


@pytest.mark.parametrize("case", upstream_params(PRED_ORIGIN, PREDICATE_CASES))
def test_predicates_upstream_case(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


ANTI_AFFINITY_PREEMPT = [Case(
        "normal-mode preemption evicts until the anti-affinity clears",
        [
            pod("worker-1", namespace="ns1", group="pg1", requests="3,3G", node="n1", phase="Running", labels={"role": "worker"}, priority=100000, affinity=WORKER_ANTI_AFFINITY),
            pod("worker-2", namespace="ns1", group="pg1", requests="3,3G", node="n1", phase="Running", priority=10),
            pod("worker-3", namespace="ns1", group="pg2", requests="3,3G", labels={"role": "worker"}, priority=100000, affinity=WORKER_ANTI_AFFINITY),
            node("n1", "12,12G,pods=2", labels={"kubernetes.io/hostname": "node1"}),
            priority_class("high-priority", 100000),
            priority_class("low-priority", 10),
            podgroup("pg1", namespace="ns1", queue="q1", min_member=0, phase="Running", priority_class="low-priority"),
            podgroup("pg2", namespace="ns1", queue="q1", min_member=1, priority_class="high-priority"),
            queue("q1", weight=0, capability="9,9G"),
        ],
        ["allocate", "preempt"],
        [[plugin("predicates", enablePredicate=True), plugin("priority", enablePreemptable=True, enableJobStarving=True)]],
        binds={},
        evictions=["ns1/worker-1", "ns1/worker-2"],
        pipelined={"ns1/pg2": ["n1"]},
    )]


def test_normal_mode_preemption_evicts_until_anti_affinity_and_pod_count_clear(tmp_path: Path) -> None:
    """Upstream's TestPodAntiAffinity expects no eviction under *topology-aware* preemption,
    whose simulated predicates (by our reading) keep counting the victims' Pods, so max pods 2
    stays exceeded. Here predicates drop evicted Pods as upstream's deallocate handler does.
    Normal mode: worker-2 goes first (reverse task order), worker-1's anti-affinity still
    blocks, so worker-1 goes too and worker-3 is pipelined. Topology-aware mode then reprieves
    worker-2."""
    run_both(ANTI_AFFINITY_PREEMPT[0], tmp_path)
    ta = dataclasses.replace(
        ANTI_AFFINITY_PREEMPT[0],
        evictions=["ns1/worker-1"],
        configurations={"preempt": {"enableTopologyAwarePreemption": True}},
    )
    run_both(ta, tmp_path / "ta")


def _scores(objs: list, opt: PluginOption, vectorize: bool) -> dict[str, dict[str, float]]:
    ssn = open_session(build_snapshot(objs), build_conf([], [[opt]]), RecordingCache(), vectorize=vectorize)
    out: dict[str, dict[str, float]] = {}
    for job in ssn.jobs.values():
        for t in job.tasks.values():
            out[t.key] = {n.name: float(ssn.prioritize(t, [n])[0]) for n in ssn.node_list}
    return out


BINPACK_OBJS = [
    pod("p1", group="pg1", requests="1,1Gi", node="n1"),
    pod("p2", group="pg1", requests="1.5,0Gi", node="n3"),
    pod("p3", group="pg1", requests="2,10Gi,nvidia.com/gpu=2"),
    pod("p4", group="pg1", requests="3,4Gi,example.com/foo=3"),
    node("n1", "2,4Gi,pods=10"),
    node("n2", "4,16Gi,pods=10,nvidia.com/gpu=4"),
    node("n3", "2,4Gi,pods=10,example.com/foo=16"),
    podgroup("pg1", queue="c1", phase=""),
    queue("c1"),
]
BINPACK_CASES = [
    (
        {"binpack.weight": 10, "binpack.cpu": 2, "binpack.memory": 3, "binpack.resources": "nvidia.com/gpu, example.com/foo",
         "binpack.resources.nvidia.com/gpu": 7, "binpack.resources.example.com/foo": 8},
        {"c1/p1": {"n1": 700, "n2": 137.5, "n3": 0}, "c1/p2": {"n1": 0, "n2": 375, "n3": 0},
         "c1/p3": {"n1": 0, "n2": 531.25, "n3": 0}, "c1/p4": {"n1": 0, "n2": 173.076923076, "n3": 0}},
    ),
    (
        {"binpack.weight": 1, "binpack.cpu": 1, "binpack.memory": 1, "binpack.resources": "nvidia.com/gpu",
         "binpack.resources.nvidia.com/gpu": 23},
        {"c1/p1": {"n1": 75, "n2": 15.625, "n3": 0}, "c1/p2": {"n1": 0, "n2": 37.5, "n3": 0},
         "c1/p3": {"n1": 0, "n2": 50.5, "n3": 0}, "c1/p4": {"n1": 0, "n2": 50, "n3": 0}},
    ),
]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param(a, e, marks=pytest.mark.upstream(f"volcano pkg/scheduler/plugins/binpack/binpack_test.go: TestNode single job #{i}"), id=f"case{i}")
        for i, (a, e) in enumerate(BINPACK_CASES)
    ],
)
@pytest.mark.parametrize("vectorize", [True, False], ids=["numpy", "loop"])
def test_binpack_scores_match_upstream(arguments: dict, expected: dict, vectorize: bool) -> None:
    got = _scores(BINPACK_OBJS, PluginOption("binpack", {"enableNodeOrder": True}, arguments), vectorize)
    for task, per_node in expected.items():
        for n, score in per_node.items():
            assert got[task][n] == pytest.approx(score, abs=1e-6), (task, n)


@pytest.mark.upstream("volcano pkg/scheduler/plugins/binpack/binpack_test.go: TestArguments")
def test_binpack_arguments_parse_with_negative_extra_weight_as_one() -> None:
    p = PLUGINS["binpack"](
        {"binpack.weight": 10, "binpack.cpu": 5, "binpack.memory": 2, "binpack.resources": "nvidia.com/gpu, example.com/foo",
         "binpack.resources.nvidia.com/gpu": 7, "binpack.resources.example.com/foo": -3}
    )
    assert isinstance(p, BinpackPlugin)
    assert p.args.weight == 10
    assert p.weights == {"cpu": 5, "memory": 2, "nvidia.com/gpu": 7, "example.com/foo": 1}


def test_binpack_ignores_an_unknown_argument_and_names_it() -> None:
    from pumice.scheduler.volcano.framework.arguments import ignored_arguments

    with ignored_arguments() as ignored:
        assert PLUGINS["binpack"].parse({"binpack.wieght": 1}) == PLUGINS["binpack"].parse({})
    assert ignored == ["unknown argument 'binpack.wieght' ignored"]
    with ignored_arguments() as ignored:  # upstream's GetInt: logged, the default kept
        assert PLUGINS["binpack"].parse({"binpack.weight": "heavy", "binpack.cpu": 3}).weight == 1
    assert ignored == ["binpack.weight: expected an integer, got 'heavy'; the default is used"]


OVERCOMMIT = [
    ("overCommitFactor is more than 0", {"overcommit-factor": 1.2}, "2000m,2G", "c1", None, True),
    ("overCommitFactor is less than 0", {"overcommit-factor": 0.8}, "2000m,2G", "c1", None, True),
    ("when the required resources of pg are too large", {"overcommit-factor": 1.2}, "20000m,20G", "c1", None, False),
    ("when pg does not fill MinResources", {"overcommit-factor": 1.2}, None, "c1", "200m,0.5G", True),
]


@pytest.mark.parametrize(
    ("name", "args", "min_res", "q", "cap", "expected"),
    [pytest.param(*o, marks=pytest.mark.upstream(f"volcano pkg/scheduler/plugins/overcommit/overcommit_test.go: {o[0]}"), id=o[0]) for o in OVERCOMMIT],
)
def test_overcommit_enqueueable_upstream_case(name: str, args: dict, min_res: str | None, q: str, cap: str | None, expected: bool) -> None:
    objs = [
        node("n1", "2,4Gi"),
        node("n2", "4,16Gi"),
        podgroup("pg1", namespace="test-namespace", queue=q, min_member=2, min_resources=min_res),
        queue(q, capability=cap),
    ]
    ssn = open_session(build_snapshot(objs), build_conf([], [[PluginOption("overcommit", {"enableJobEnqueued": True}, args)]]), RecordingCache())
    for job in ssn.jobs.values():
        ssn.job_enqueued(job)
        assert ssn.job_enqueueable(job) is expected


def test_overcommit_gate_keeps_a_huge_pod_group_pending_through_enqueue(tmp_path: Path) -> None:
    case = Case(
        "overcommit rejects a PodGroup larger than total x factor",
        [node("n1", "2,4Gi"), node("n2", "4,16Gi"), queue("c1"), podgroup("pg1", min_member=1, min_resources="20000m,20G", phase="Pending"),
         podgroup("pg2", min_member=1, min_resources="2,2G", phase="Pending")],
        ["enqueue"],
        [[plugin("overcommit", enableJobEnqueued=True)]],
        phases={"c1/pg1": "Pending", "c1/pg2": "Inqueue"},
    )
    run_both(case, tmp_path)


def _job(min_available: int, tasks: list[tuple[str, TaskStatus, str]]) -> JobInfo:
    j = JobInfo(uid="job-1", name="job-1", namespace="default", min_available=min_available)
    for uid, st, n in tasks:
        j.add_task(TaskInfo(uid=uid, name=uid, namespace="default", job="job-1", role="", resreq=Resource(), status=st, node_name=n))
    return j


GANG = [
    ("partial termination", 2, [("running", TaskStatus.Running, "node-1"), ("releasing", TaskStatus.Releasing, "node-2")], True),
    ("pending replacement still needs condition", 2,
     [("running", TaskStatus.Running, "node-1"), ("releasing", TaskStatus.Releasing, "node-2"), ("replacement", TaskStatus.Pending, "")], False),
    ("pipelined replacement still needs condition", 2,
     [("running", TaskStatus.Running, "node-1"), ("releasing", TaskStatus.Releasing, "node-2"), ("replacement", TaskStatus.Pipelined, "node-3")], False),
    ("never scheduled releasing task is not counted", 1, [("releasing", TaskStatus.Releasing, "")], False),
    ("scheduled tasks below minAvailable", 3, [("running", TaskStatus.Running, "node-1"), ("releasing", TaskStatus.Releasing, "node-2")], False),
]


@pytest.mark.parametrize(
    ("name", "min_available", "tasks", "expected"),
    [pytest.param(*g, marks=pytest.mark.upstream(f"volcano pkg/scheduler/plugins/gang/gang_test.go: {g[0]}"), id=g[0]) for g in GANG],
)
def test_gang_skip_unschedulable_for_releasing_upstream_case(name: str, min_available: int, tasks: list, expected: bool) -> None:
    assert _skip_for_releasing(_job(min_available, tasks)) is expected


def test_gang_job_valid_reports_not_enough_tasks() -> None:
    objs = [node("n1"), queue("c1"), podgroup("pg1", min_member=3), pod("p1", group="pg1", requests="1,1Gi")]
    res = run_scenario(objs, actions=["allocate"], tiers=[["gang", "predicates"]])
    assert res.binds == {}


def test_taint_without_toleration_is_an_upstream_fit_error() -> None:
    from pumice.testing.volcano import taint, toleration

    objs = [node("n1", taints=[taint("dedicated", "gpu")]), node("n2", "1,1Gi,pods=10"), queue("c1"), podgroup("pg1", min_member=1), pod("p1", group="pg1", requests="2,2Gi")]
    res = run_scenario(objs, actions=["allocate"], tiers=[["gang", "predicates"]])
    assert res.unschedulable["c1/p1"][1] == (
        "0/2 nodes are unavailable: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}."
    )
    objs[-1] = pod("p1", group="pg1", requests="2,2Gi", tolerations=[toleration("dedicated", "gpu", "NoSchedule")])
    res = run_scenario(objs, actions=["allocate"], tiers=[["gang", "predicates"]])
    assert res.binds == {"c1/p1": "n1"}


def test_host_port_conflict_keeps_second_pod_off_the_node() -> None:
    objs = [node("n1"), node("n2"), queue("c1"), podgroup("pg1")]
    objs += [pod("a", group="pg1", requests="1,1Gi", host_ports=[8080], node="n1", phase="Running"), pod("b", group="pg1", requests="1,1Gi", host_ports=[8080])]
    res = run_scenario(objs, actions=["allocate"], tiers=[["predicates"]])
    assert res.binds == {"c1/b": "n2"}


def test_required_node_affinity_in_and_not_in() -> None:
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}, {"key": "gpu", "operator": "DoesNotExist"}]}]}}}
    objs = [node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "b", "gpu": "1"}), node("n3", labels={"zone": "b"}), queue("c1"), podgroup("pg1")]
    objs.append(pod("p", group="pg1", requests="1,1Gi", affinity=aff))
    res = run_scenario(objs, actions=["allocate"], tiers=[["predicates"]])
    assert res.binds == {"c1/p": "n3"}
