"""NodeArrays.rowwise: the per-request results kept across tasks and sessions (resource fits,
the pods check, nodeorder's resource scores) equal a computation from the NodeInfos as they are,
after any sequence of row changes (seeded random: tasks added, removed, marked evicted, Nodes
replaced by copies through NodeArrays.reuse)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.resource import PODS, Dimension, Resource
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.cache.incremental import clone_node
from pumice.scheduler.volcano.framework import node_arrays
from pumice.scheduler.volcano.framework.node_arrays import NodeArrays
from pumice.scheduler.volcano.plugins.nodeorder import NodeOrderArgs, node_resource_scores, resource_scores
from pumice.scheduler.volcano.plugins.predicates import pods_room
from pumice.testing.volcano import node, pod

GPU = "nvidia.com/gpu"
SHAPES = ["8,32Gi,pods=4,nvidia.com/gpu=4", "16,64Gi,pods=110,nvidia.com/gpu=8", "4,16Gi,pods=2", "32,128Gi,pods=110"]
REQUESTS = ["1,4Gi,nvidia.com/gpu=1", "2,8Gi,nvidia.com/gpu=2", "500m,1Gi", "4,16Gi", None, "3,20Gi,nvidia.com/gpu=4"]


def _nodes(rng: random.Random, n: int, zero_cpu: bool = False) -> list[NodeInfo]:
    out = [NodeInfo.from_node(node(f"n{i}", rng.choice(SHAPES))) for i in range(n)]
    if zero_cpu:  # a node with no allocatable CPU: the scores' division-by-zero branches
        out.append(NodeInfo.from_node(node(f"n{n}", "0,8Gi,pods=110")))
    return out


def _task(rng: random.Random, i: int) -> TaskInfo:
    t = TaskInfo.from_pod(pod(f"p{i}", requests=rng.choice(REQUESTS)))
    t.status = rng.choice([TaskStatus.Running, TaskStatus.Running, TaskStatus.Pipelined, TaskStatus.Releasing])
    return t


def _expected_fits(req: Resource, nodes: list[NodeInfo], which: str) -> np.ndarray:
    return np.array([req.less_equal(n.future_idle() if which == "future_idle" else n.idle, Dimension.ZERO) for n in nodes])


def _expected_scores(args: NodeOrderArgs, task: TaskInfo, nodes: list[NodeInfo]) -> np.ndarray:
    nonzero = np.array([n.kube_nonzero for n in nodes], dtype=float)
    requested = np.array([n.kube_requested for n in nodes], dtype=float)
    alloc = np.array([[n.allocatable.milli_cpu, n.allocatable.memory] for n in nodes], dtype=float)
    return resource_scores(args, task, nonzero, requested, alloc[:, 0], alloc[:, 1])


def _expected_pods(nodes: list[NodeInfo]) -> np.ndarray:
    return np.array([not (n.allocatable.has_scalar(PODS) and n.allocatable.get(PODS) <= n.pod_count()) for n in nodes])


@pytest.mark.parametrize(("seed", "zero_cpu"), [(1, False), (2, False), (3, True)])
def test_kept_results_equal_a_fresh_computation_after_random_row_changes(seed: int, zero_cpu: bool) -> None:
    rng = random.Random(seed)
    nodes = _nodes(rng, 40, zero_cpu)
    arr = NodeArrays(nodes)
    args_list = [NodeOrderArgs(), NodeOrderArgs(most_requested=2, least_requested=0, balanced_resource=3)]
    asks = [_task(rng, -k) for k in range(len(REQUESTS))]
    placed: list[tuple[int, TaskInfo]] = []
    serial = 0
    for step in range(400):
        # one to three row changes, sometimes none; a copy of a node through reuse now and then
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            roll = rng.random()
            if roll < 0.5 or not placed:
                serial += 1
                i, t = rng.randrange(len(nodes)), _task(rng, serial)
                t.node_name = nodes[i].name
                nodes[i].add_task(t)
                placed.append((i, t))
            elif roll < 0.8:
                i, t = placed.pop(rng.randrange(len(placed)))
                nodes[i].remove_task(t)
            else:
                i, t = rng.choice(placed)
                nodes[i].mark_evicted(t.key, t.key not in nodes[i].evicted)
        if step % 37 == 0:  # (as between sessions: the changed rows are read before the copy)
            arr.sync()
            i = rng.randrange(len(nodes))
            nodes = list(nodes)
            nodes[i] = clone_node(nodes[i])
            # (the copy holds one more task, as a Node's replaced NodeInfo does)
            serial += 1
            t = _task(rng, serial)
            t.node_name = nodes[i].name
            nodes[i].add_task(t)
            placed.append((i, t))
            assert NodeArrays.reuse(arr, nodes, candidates=[i]) is arr
            # the arrays brought up to date hold what a fresh build holds, byte for byte
            fresh = NodeArrays(nodes)
            for name in ("allocatable", "has_dim", "idle", "future_idle", "used", "pod_count", "kube_requested",
                         "kube_nonzero", "prefer_no_schedule"):
                np.testing.assert_array_equal(getattr(arr, name), getattr(fresh, name))
            assert arr._fixed == fresh._fixed and arr._content == fresh._content
            for k, n in enumerate(nodes):  # (the fresh build took the nodes' change hooks)
                n.index, n.on_change = k, arr._mark
        if step % 3:  # not every step asks: the log grows between asks
            continue
        for ask in rng.sample(asks, 3):
            for which in ("future_idle", "idle"):
                got = arr.fits(ask.resreq, which)
                assert not got.flags.writeable
                np.testing.assert_array_equal(got, _expected_fits(ask.resreq, nodes, which))
                rows = np.array(sorted(rng.sample(range(len(nodes)), 7)))
                np.testing.assert_array_equal(arr.fits(ask.resreq, which, rows), got[rows])
            for args in args_list:
                np.testing.assert_array_equal(node_resource_scores(args, ask, arr), _expected_scores(args, ask, nodes))
        np.testing.assert_array_equal(pods_room(arr), _expected_pods(nodes))
    assert len(arr._written) <= 4 * len(nodes) + 64  # the log was trimmed along the way


def test_a_result_handed_out_is_not_changed_by_later_writes() -> None:
    rng = random.Random(7)
    nodes = _nodes(rng, 30)
    arr = NodeArrays(nodes)
    req = Resource.from_list({"cpu": "1", "memory": "1Gi"})
    before = arr.fits(req, "idle")
    kept = before.copy()
    big = TaskInfo.from_pod(pod("big", requests="32,128Gi"))
    big.status, big.node_name = TaskStatus.Running, "n0"
    nodes[0].add_task(big)  # whatever n0 had, nothing more fits there now
    after = arr.fits(req, "idle")
    np.testing.assert_array_equal(before, kept)
    assert not after[0] and after is not before
    with pytest.raises(ValueError):
        after[0] = True  # read-only: a caller cannot change what other callers read


def test_results_are_kept_for_a_bounded_number_of_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_arrays, "ROWWISE_KEYS", 4)
    rng = random.Random(11)
    nodes = _nodes(rng, 20)
    arr = NodeArrays(nodes)
    for k in range(10):
        req = Resource.from_list({"cpu": f"{k + 1}", "memory": "1Gi"})
        np.testing.assert_array_equal(arr.fits(req, "idle"), _expected_fits(req, nodes, "idle"))
        assert len(arr._rowwise) <= 4
