"""JobMemo: a plugin's result over unchanged jobs is computed once and handed back while the
jobs' versions and the inputs stay the same; the verify mode recomputes and compares."""

from __future__ import annotations

from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.api.job_info import JobInfo, JobMemo
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.testing.volcano import pod


def _job(uid: str, version: int) -> JobInfo:
    return JobInfo(uid=uid, name=uid.split("/")[-1], namespace="default", version=version)


class _Count:
    def __init__(self, value: object) -> None:
        self.calls = 0
        self.value = value

    def __call__(self, *_: object) -> object:
        self.calls += 1
        return self.value


def test_a_job_result_is_kept_while_the_version_and_inputs_stay_the_same() -> None:
    memo, f = JobMemo(), _Count(Resource(1000, 2))
    j = _job("default/a", 3)
    assert memo.job("p", j, ("total", 1), f) is f.value
    assert memo.job("p", _job("default/a", 3), ("total", 1), f) is f.value
    assert (f.calls, memo.hits) == (1, 1)
    memo.job("p", j, ("total", 2), f)  # other inputs
    memo.job("p", _job("default/a", 4), ("total", 2), f)  # the base job was rebuilt
    assert f.calls == 3
    memo.forget("default/a")
    memo.job("p", _job("default/a", 4), ("total", 2), f)
    assert f.calls == 4


def test_a_job_outside_the_incremental_snapshot_is_computed_every_time() -> None:
    memo, f = JobMemo(), _Count(1)
    for _ in range(3):
        memo.job("p", _job("default/a", 0), None, f)
        memo.group("g", "q", [_job("default/a", 0)], None, f)
    assert (f.calls, memo.hits) == (6, 0)


def test_a_group_result_is_kept_only_for_the_same_jobs_in_the_same_order() -> None:
    memo, f = JobMemo(), _Count(("sums",))
    a, b = _job("default/a", 1), _job("default/b", 2)
    memo.group("g", "q1", [a, b], None, f)
    memo.group("g", "q1", [a, b], None, f)
    assert f.calls == 1
    memo.group("g", "q1", [b, a], None, f)
    memo.group("g", "q2", [b, a], None, f)
    memo.group("g", "q2", [b, _job("default/a", 5)], None, f)
    assert f.calls == 4


def test_verify_mode_reports_a_kept_result_that_differs_from_a_fresh_one() -> None:
    seen: list[str] = []
    memo = JobMemo(seen.append)
    j = _job("default/a", 1)
    memo.job("p", j, None, lambda _j: (Resource(1000, 0), "cpu", 0.5))
    memo.job("p", j, None, lambda _j: (Resource(1000, 0), "cpu", 0.5))
    assert seen == []
    # equal within Resource's epsilon, yet not the same floats: reported
    memo.job("p", j, None, lambda _j: (Resource(1000.000001, 0), "cpu", 0.5))
    assert len(seen) == 1 and "p of default/a" in seen[0]


def test_a_change_of_the_jobs_tasks_or_phase_makes_it_computed_afresh() -> None:
    t = TaskInfo.from_pod(pod("p-0", group="pg", requests="1,1Gi"))
    j = JobInfo(uid="default/pg", name="pg", namespace="default", pod_group={"spec": {}, "status": {"phase": "Pending"}})
    j.add_task(t)
    memo, f = JobMemo(), _Count(None)
    changes = (lambda: j.update_task_status(t, TaskStatus.Allocated), lambda: j.set_phase(PodGroupPhase.INQUEUE),
               lambda: j.delete_task(t), lambda: j.add_task(t))
    for version, change in enumerate(changes, start=7):
        j.version = version
        memo.job("p", j, None, f)
        memo.job("p", j, None, f)  # kept
        change()
        assert j.version == 0
        memo.job("p", j, None, f)  # computed again
    assert (f.calls, memo.hits) == (8, 4)


def _queue_job(uid: str, version: int, requests: list[str], phase: PodGroupPhase, rng_status: list[TaskStatus],
               min_resources: dict[str, str] | None = None) -> JobInfo:
    pg: dict = {"spec": {"minMember": 1}, "status": {"phase": str(phase)}}
    if min_resources is not None:
        pg["spec"]["minResources"] = min_resources
    j = JobInfo(uid=uid, name=uid.split("/")[-1], namespace="default", pod_group=pg,
                min_resources=Resource.from_list(min_resources) if min_resources else None)
    for i, (req, st) in enumerate(zip(requests, rng_status, strict=True)):
        t = TaskInfo.from_pod(pod(f"{j.name}-{i}", namespace="default", group=j.name, requests=req))
        t.status = st
        j.add_task(t)
    j.version = version
    return j


def exact_data(sums: tuple[Resource, ...]) -> list:
    return [(r.milli_cpu, r.memory, list(r.scalars.items())) for r in sums]


def test_proportion_queue_sums_from_job_parts_equal_the_task_by_task_sums_float_for_float() -> None:
    from random import Random

    from pumice.scheduler.volcano.api.resource import sum_resources
    from pumice.scheduler.volcano.api.types import ALLOCATED_STATUSES
    from pumice.scheduler.volcano.framework.session import queue_allocated
    from pumice.scheduler.volcano.plugins.proportion import _queue_sums, queue_sums_by_job

    rng = Random(5)
    statuses = [TaskStatus.Running, TaskStatus.Pending, TaskStatus.Binding, TaskStatus.Succeeded, TaskStatus.Allocated]
    for fractional in (False, True):
        memo = JobMemo()
        for rnd in range(3):
            jobs = []
            for k in range(12):
                n = rng.randint(1, 4)
                reqs = [f"{rng.choice(['1', '250m', '3']) if not fractional else rng.choice(['0.0001', '1.0003', '7m'])},"
                        f"{rng.choice(['1Gi', '1.5Gi', '3001'])}"
                        + rng.choice(["", ",nvidia.com/gpu=1", ",example.com/fpga=2"]) for _ in range(n)]
                jobs.append(_queue_job(f"default/j{rnd}-{k}", k + 1, reqs, rng.choice([PodGroupPhase.RUNNING, PodGroupPhase.INQUEUE]),
                                       [rng.choice(statuses) for _ in range(n)],
                                       {"cpu": "2", "memory": "1Gi"} if k % 3 else None))
            for order in (jobs, jobs[::-1], jobs[3:], jobs):  # later passes: memo hits
                assert exact_data(queue_sums_by_job(memo, order)) == exact_data(_queue_sums(order))
                # close's per-queue allocated: the same, against the task-by-task sum
                flat = sum_resources(t.resreq for j in order for s in ALLOCATED_STATUSES
                                     for t in j.task_status_index.get(s, {}).values())
                assert exact_data((queue_allocated(memo, order),)) == exact_data((flat,))
        assert memo.hits > 0
    # a stale part (the job changed but kept its version) would give another sum: the version
    # is what keys the part, so a changed job must come with a new version
    memo = JobMemo()
    a = _queue_job("default/a", 1, ["1,1Gi"], PodGroupPhase.RUNNING, [TaskStatus.Running])
    assert queue_sums_by_job(memo, [a])[0].milli_cpu == 1000
    b = _queue_job("default/a", 2, ["1,1Gi", "2,1Gi"], PodGroupPhase.RUNNING, [TaskStatus.Running] * 2)
    assert queue_sums_by_job(memo, [b])[0].milli_cpu == 3000
