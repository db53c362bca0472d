"""A quantity too large for int64 (``cpu: 1e400``, which kube-apiserver stores: Pod validation sets
no upper bound) neither stops the scheduler nor ``pumice explain`` for other objects (trial-7 F-7)."""

from __future__ import annotations

import itertools
import logging

import pytest

from pumice.api.quantity import INT64_MAX, milli_value_int64, value_int64
from pumice.scheduler.volcano import default_conf
from pumice.scheduler.volcano.api.job_info import JobMemo
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.cache import incremental
from pumice.scheduler.volcano.cache.snapshot import SnapshotError
from pumice.scheduler.volcano.explain import explain
from pumice.scheduler.volcano.scheduler import Scheduler
from pumice.testing.cluster import local_cluster
from pumice.testing.volcano import node, pod, podgroup, queue

from .test_incremental_snapshot import _create, _settle

NS = "c1"


def test_int64_accessors_saturate_where_the_exact_amount_does_not_fit() -> None:
    assert milli_value_int64("1e400") == INT64_MAX
    assert value_int64("-1e400") == -INT64_MAX - 1
    assert milli_value_int64("1500m") == 1500 and value_int64("1Gi") == 2**30
    r = Resource.from_list({"cpu": "1e400", "memory": "1e400", "nvidia.com/gpu": "1e400"})
    assert r.milli_cpu == float(INT64_MAX) and r.memory == float(INT64_MAX)
    assert r.get("nvidia.com/gpu") == float(INT64_MAX)


def _objects() -> list[dict]:
    return [
        node("n1", "8,16Gi,pods=110"), queue("q1"),
        podgroup("huge", namespace=NS, queue="q1", min_member=1, min_resources={"cpu": "1e400"}),
        pod("huge-0", namespace=NS, group="huge", requests={"cpu": "1e400"}),
        podgroup("small", namespace=NS, queue="q1", min_member=1, min_resources="1,1Gi"),
        pod("small-0", namespace=NS, group="small", requests="1,1Gi"),
    ]


def test_explain_of_other_objects_works_beside_a_huge_request_and_the_huge_one_is_explained() -> None:
    small = explain(_objects(), "podgroup", "small", NS, default_conf())
    assert small.gate == "binding", small.render()
    huge = explain(_objects(), "podgroup", "huge", NS, default_conf())
    assert "it can never fit" in huge.reason and "cpu 9223372036854775808m" in huge.reason, huge.render()


async def test_the_live_scheduler_binds_other_pods_beside_a_huge_request(tmp_path) -> None:
    """trial-7 F-18: PodGroup c1/small comes after c1/huge in the cache's batch; it was dropped."""
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        for o in _objects():
            await _create(client, o)
        sched = Scheduler(client, schedule_period=0.05, snapshot_mode="verify")
        await sched.cache.start(timeout=5)
        try:
            for _ in range(3):
                await _settle(sched)
                sched.run_once()
            assert sched.cache.snapshot_mismatches == 0
            await _settle(sched)
            pods = client.scheme.resolve("pods")
            assert (await client.get(pods, "small-0", NS))["spec"].get("nodeName") == "n1"
            assert not (await client.get(pods, "huge-0", NS))["spec"].get("nodeName")
        finally:
            await sched.cache.stop()


def test_a_podgroup_that_fails_to_build_leaves_the_rest_of_the_batch_applied(monkeypatch, caplog) -> None:
    """trial-7 F-18: only SnapshotError was caught, so any other error while building one job
    cleared the dirty set and dropped every PodGroup after it in the batch for good."""
    real = incremental.job_from_pod_group

    def flaky(pg: dict, *a: object) -> object:
        if pg["metadata"]["name"] == "a":
            raise OverflowError("int too large to convert to float")
        return real(pg, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(incremental, "job_from_pod_group", flaky)

    class Lister:
        def __init__(self, objs: dict[str, dict]) -> None:
            self.objs = objs

        def get_by_key(self, key: str) -> dict | None:
            return self.objs.get(key)

    class Inf:
        def __init__(self, objs: dict[str, dict]) -> None:
            self.lister = Lister(objs)

    pgs = {f"{NS}/{n}": podgroup(n, namespace=NS, queue="q1", min_member=1) for n in ("a", "b", "c")}
    snap = incremental.IncrementalSnapshot.__new__(incremental.IncrementalSnapshot)
    state = {
        "informers": {"PodGroup": Inf(pgs)}, "dirty_jobs": set(pgs), "_bad_jobs": {}, "_base_jobs": {},
        "_job_keys": {}, "_job_pods": {}, "_close_quiet": {}, "_job_order_dirty": False, "_job_order": [],
        "_job_order_sorted": True,
        "_priority_classes": {}, "_default_priority": 0, "exotic": False, "_rebuilt": set(),
    }
    for k, v in state.items():
        object.__setattr__(snap, k, v)
    snap._job_memo = JobMemo()  # type: ignore[call-arg]
    snap._job_builds = itertools.count(1)
    snap._sorted_tasks = lambda pods: []  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger=incremental.__name__):
        snap._apply_jobs()
    assert sorted(snap._base_jobs) == [f"{NS}/b", f"{NS}/c"]
    # left out of sessions (not a SnapshotError, which would stop every cycle), and said so
    assert snap._bad_jobs == {}
    assert "PodGroup c1/a: left out of scheduling until it changes: OverflowError" in caplog.text


def test_an_object_the_scheduler_cannot_read_is_left_out_of_another_objects_explanation() -> None:
    bad = pod("bad-0", namespace=NS, group="huge", requests={"cpu": "lots"})
    objs = [*_objects(), bad]
    small = explain(objs, "podgroup", "small", NS, default_conf())
    assert small.gate == "binding", small.render()
    assert any("left out" in d and "Pod c1/bad-0" in d and "'lots'" in d for d in small.details), small.render()
    # the target's own PodGroup unreadable: the error names it
    broken = podgroup("broken", namespace=NS, queue="q1", min_member=1, min_resources={"cpu": "lots"})
    with pytest.raises(SnapshotError, match=r"PodGroup c1/broken: spec\.minResources"):
        explain([*_objects(), broken], "podgroup", "broken", NS, default_conf())


async def test_an_exponent_of_any_size_parses_at_once_and_the_api_stores_the_pod() -> None:
    """10**999999999 as an exact fraction would never finish: the API server's loop would hang."""
    assert milli_value_int64("1e999999999") == INT64_MAX
    assert milli_value_int64("1e-999999999") == 1  # below a nano-unit: rounds up, as Go's ParseQuantity
    async with local_cluster() as c:
        await c.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        p = pod("far", namespace=NS, requests={"cpu": "1e999999999"})
        for k in ("uid", "creationTimestamp"):
            p["metadata"].pop(k, None)
        p.pop("status", None)
        made = await c.client.create(p)
        assert made["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1e999999999"
