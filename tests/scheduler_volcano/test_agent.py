"""The Agent Scheduler (Volcano 1.14): per-Pod queue, parallel workers on one view, the
conflict-aware binder, and a conflict with the batch scheduler over the last slot."""

from __future__ import annotations

from typing import Any

from pumice.scheduler.default.queue import SchedulingQueue
from pumice.scheduler.volcano.agent.core import AGENT_SCHEDULER_NAME, AgentScheduler, AgentView
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.cache.snapshot import build_snapshot, run_session
from pumice.scheduler.volcano.conf import build_conf
from pumice.testing.volcano import node, pod, podgroup, queue

TIERS = [["priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder"]]


def agent_pod(name: str, requests: str = "1,1Gi", **kw: Any) -> dict:
    return pod(name, requests=requests, scheduler_name=AGENT_SCHEDULER_NAME, **kw)


def view_of(objs: list[dict]) -> AgentView:
    return AgentView(build_snapshot(objs, scheduler_names=(AGENT_SCHEDULER_NAME,)))


def overcommitted(objs: list[dict], binds: dict[str, str]) -> list[str]:
    """Nodes whose bound Pods' cpu requests exceed allocatable."""
    snap = build_snapshot([*[o for o in objs if o["kind"] == "Node"],
                           *[{**o, "spec": {**o["spec"], "nodeName": binds[f"{o['metadata']['namespace']}/{o['metadata']['name']}"]}}
                             for o in objs if o["kind"] == "Pod" and f"{o['metadata']['namespace']}/{o['metadata']['name']}" in binds],
                           *[o for o in objs if o["kind"] == "Pod" and o["spec"].get("nodeName")]])
    return sorted(n.name for n in snap.nodes.values() if n.used.milli_cpu > n.allocatable.milli_cpu)


def run_twice(fn: Any) -> Any:
    first, again = fn(), fn()
    assert first == again, "not deterministic"
    return first


def test_the_default_queue_puts_a_conflicted_pod_ahead_of_every_priority_without_backoff() -> None:
    q = SchedulingQueue()
    q.add("c1/low", "c1", "low", 0, now=0.0)
    q.add("c1/high", "c1", "high", 100, now=1.0)
    assert q.pop_nowait().uid == "c1/high"  # type: ignore[union-attr]
    assert q.pop_nowait().uid == "c1/low"  # type: ignore[union-attr]
    q.failed("c1/low", now=2.0)  # attempt 1 failed: backoff would be 1 s
    q.move_all_to_active_or_backoff(now=2.0)
    q.requeue_urgent("c1/high", now=2.0)
    q.add("c1/top", "c1", "top", 1000, now=2.0)
    assert [q.pop_nowait().uid for _ in range(2)] == ["c1/high", "c1/top"]  # type: ignore[union-attr]
    assert q.pop_nowait() is None  # low is still backing off
    q.flush(now=3.0)
    assert q.pop_nowait().uid == "c1/low"  # type: ignore[union-attr]


def test_workers_pick_spread_nodes_and_the_binder_resolves_their_conflict() -> None:
    objs = [node("n0", "2,8Gi,pods=110"), node("n1", "4,8Gi,pods=110"), *(agent_pod(f"a{i}", "2,1Gi") for i in range(3))]

    def go() -> tuple[dict[str, str], list[str], dict[str, str], list[str]]:
        view = view_of(objs)
        sched = AgentScheduler(view, workers=3)
        for o in objs[2:]:
            sched.add(TaskInfo.from_pod(o), 0.0)
        rep = sched.step(now=0.0)  # three workers, one view: all rank the same Nodes
        later = sched.step(now=0.0)  # the conflicted Pod was requeued at the head
        binds = {**rep.bound, **later.bound}
        return rep.bound, rep.conflicted, binds, overcommitted(objs, binds)

    first_round, conflicted, binds, over = run_twice(go)
    # all three rank n1 (idler) over n0; the second falls back to n0, the third finds both stale
    assert first_round == {"c1/a0": "n1", "c1/a1": "n0"} and conflicted == ["c1/a2"]
    assert binds == {"c1/a0": "n1", "c1/a1": "n0", "c1/a2": "n1"} and over == []


def test_a_pod_that_fits_nowhere_goes_to_the_pool_and_returns_on_a_cluster_event() -> None:
    objs = [node("n0", "2,8Gi,pods=110"), agent_pod("big", "3,1Gi")]
    view = view_of(objs)
    sched = AgentScheduler(view)
    sched.add(TaskInfo.from_pod(objs[1]), 0.0)
    rep = sched.step(now=0.0)
    assert rep.unschedulable == {"c1/big": "0/1 nodes are unavailable: 1 Insufficient cpu."}
    assert sched.step(now=5.0).bound == {}  # still in the pool: no cluster event yet
    sched.cluster_event(5.0)  # backoff of the first attempt (1 s) is over: straight to activeQ
    assert sched.step(now=5.0).unschedulable == {"c1/big": "0/1 nodes are unavailable: 1 Insufficient cpu."}


def batch_objects() -> list[dict]:
    """One 4-cpu Node with 3 cpu in use: one slot of 1 cpu left, wanted by a batch job's Pod and an
    agent Pod."""
    return [node("n0", "4,8Gi,pods=110"), queue("q1"), pod("busy", requests="3,1Gi", node="n0", phase="Running"),
            podgroup("b", queue="q1", min_member=1, phase="Inqueue"), pod("b-0", group="b", requests="1,1Gi"),
            agent_pod("a-0", "1,1Gi")]


def test_conflict_batch_binds_first_then_the_agent_result_is_stale_and_requeued() -> None:
    def go() -> tuple[dict[str, str], dict[str, str], list[str], dict[str, str], list[str]]:
        objs = batch_objects()
        view = view_of(objs)
        sched = AgentScheduler(view)
        sched.add(TaskInfo.from_pod(objs[-1]), 0.0)
        results = sched.compute(now=0.0)  # the agent worker chose n0 ...
        assert [c.node for c in results[0].candidates] == ["n0"]
        batch = run_session(build_snapshot(objs), build_conf(["allocate"], TIERS)).binds  # ... the batch session binds there
        for key, n in batch.items():
            o = next(p for p in objs if p["kind"] == "Pod" and f"c1/{p['metadata']['name']}" == key)
            view.observe_bound({**o, "spec": {**o["spec"], "nodeName": n}})
        rep = sched.resolve(results, now=0.0)
        again = sched.step(now=0.0)
        binds = {**batch, **rep.bound, **again.bound}
        return batch, rep.bound, rep.conflicted, again.unschedulable, overcommitted(objs, binds)

    batch, agent, conflicted, unsched, over = run_twice(go)
    assert batch == {"c1/b-0": "n0"} and agent == {} and conflicted == ["c1/a-0"]
    assert unsched == {"c1/a-0": "0/1 nodes are unavailable: 1 Insufficient cpu."} and over == []


def test_conflict_agent_binds_first_and_the_batch_session_sees_the_slot_taken() -> None:
    def go() -> tuple[dict[str, str], dict[str, str], list[str]]:
        objs = batch_objects()
        sched = AgentScheduler(view_of(objs))
        sched.add(TaskInfo.from_pod(objs[-1]), 0.0)
        agent = sched.step(now=0.0).bound
        bound = [{**o, "spec": {**o["spec"], "nodeName": agent[f"c1/{o['metadata']['name']}"]}}
                 if f"c1/{o['metadata']['name']}" in agent else o for o in objs]
        batch = run_session(build_snapshot(bound), build_conf(["allocate"], TIERS)).binds
        return agent, batch, overcommitted(objs, {**agent, **batch})

    agent, batch, over = run_twice(go)
    assert agent == {"c1/a-0": "n0"} and batch == {} and over == []


def test_vectorised_and_plain_workers_agree() -> None:
    objs = [*(node(f"n{i:02d}", f"{2 + i % 3},16Gi,pods=110") for i in range(12)),
            *(agent_pod(f"a{i:02d}", f"{1 + i % 2},1Gi") for i in range(30))]

    def go(vectorize: bool) -> tuple[dict[str, str], list[str]]:
        sched = AgentScheduler(AgentView(build_snapshot(objs, scheduler_names=(AGENT_SCHEDULER_NAME,)), vectorize=vectorize),
                               workers=2)
        for o in objs[12:]:
            sched.add(TaskInfo.from_pod(o), 0.0)
        binds: dict[str, str] = {}
        for _ in range(40):
            binds.update(sched.step(now=0.0).bound)
        return binds, overcommitted(objs, binds)

    vec = run_twice(lambda: go(True))
    assert vec == go(False) and vec[1] == []
    binds = vec[0]
    free = {f"n{i:02d}": 2 + i % 3 for i in range(12)}
    for key, n in binds.items():
        free[n] -= 1 + int(key[-2:]) % 2
    left = [1 + i % 2 for i in range(30) if f"c1/a{i:02d}" not in binds]
    assert len(binds) == 24 and left and min(left) > max(free.values())  # whatever is left fits nowhere


def test_soft_sharding_prefers_the_shard_and_falls_back_when_it_is_full() -> None:
    objs = [node("n0", "8,16Gi,pods=110"), node("n1", "8,16Gi,pods=110"), node("n2", "2,16Gi,pods=110"),
            *(agent_pod(f"a{i}", "1,1Gi") for i in range(4))]

    def go(preferred: set[str] | None) -> dict[str, str]:
        sched = AgentScheduler(AgentView(build_snapshot(objs, scheduler_names=(AGENT_SCHEDULER_NAME,)), preferred=preferred))
        for o in objs[3:]:
            sched.add(TaskInfo.from_pod(o), 0.0)
        binds: dict[str, str] = {}
        for _ in range(4):
            binds.update(sched.step(now=0.0).bound)
        return binds

    assert "n2" not in run_twice(lambda: go(None)).values()  # unsharded: the idler 8-cpu Nodes win
    soft = run_twice(lambda: go({"n2"}))
    assert [soft[f"c1/a{i}"] for i in range(2)] == ["n2", "n2"] and {soft["c1/a2"], soft["c1/a3"]} <= {"n0", "n1"}


# The worker threads (WorkerPool): what the live scheduler and the bench run.


def test_worker_threads_compute_at_once_and_the_binder_resolves_their_conflicts() -> None:
    import threading

    from pumice.scheduler.volcano.agent.core import ScheduleResult, WorkerPool

    objs = [node("n0", "1,8Gi,pods=110"), *(agent_pod(f"a{i}", "1,1Gi") for i in range(3))]
    sched = AgentScheduler(view_of(objs), workers=3)
    results: list[tuple[str, ScheduleResult]] = []
    # each worker thread blocks after handing over its first result until all three have one, so
    # no thread can take a second Pod: three threads computed on the same view version
    together = threading.Barrier(3, timeout=10)
    first = threading.local()

    def emit(r: ScheduleResult) -> None:
        results.append((threading.current_thread().name, r))
        if not getattr(first, "seen", False):
            first.seen = True
            together.wait()

    pool = WorkerPool(sched, lambda: 0.0, emit)
    for o in objs[1:]:
        sched.add(TaskInfo.from_pod(o), 0.0)
    pool.start()
    try:
        deadline = threading.Event()
        for _ in range(200):
            if len(results) >= 3:
                break
            deadline.wait(0.05)
        assert len(results) == 3
        assert len({name for name, _ in results}) == 3  # three worker threads
        assert all(r.candidates and r.candidates[0].node == "n0" for _, r in results)
        rep = sched.resolve([r for _, r in results], now=0.0)  # the binder: one wins, two are stale
        assert len(rep.bound) == 1 and len(rep.conflicted) == 2 and sched.binder.conflicts == 2
        # the conflicted Pods are requeued urgently; the workers recompute on the updated view
        for _ in range(200):
            if len(results) >= 5:
                break
            deadline.wait(0.05)
        again = sched.resolve([r for _, r in results[3:]], now=0.0)
        assert again.bound == {} and sorted(again.unschedulable) == sorted(rep.conflicted)
        assert set(again.unschedulable.values()) == {"0/1 nodes are unavailable: 1 Insufficient cpu."}
    finally:
        pool.stop()


def test_many_worker_threads_with_a_concurrent_binder_never_overcommit_and_place_what_fits() -> None:
    import queue as stdqueue

    from pumice.scheduler.volcano.agent.core import ScheduleResult, WorkerPool

    objs = [*(node(f"n{i}", "4,64Gi,pods=110") for i in range(8)), *(agent_pod(f"a{i:02d}", "1,1Gi") for i in range(40))]
    sched = AgentScheduler(view_of(objs), workers=4)
    out: stdqueue.Queue[ScheduleResult] = stdqueue.Queue()
    pool = WorkerPool(sched, lambda: 0.0, out.put)
    for o in objs[8:]:
        sched.add(TaskInfo.from_pod(o), 0.0)
    pool.start()
    bound: dict[str, str] = {}
    unschedulable: set[str] = set()
    try:
        while len(bound) + len(unschedulable) < 40:
            rep = sched.resolve([out.get(timeout=10)], now=0.0)  # the binder, concurrently with the workers
            bound.update(rep.bound)
            unschedulable.update(rep.unschedulable)
    finally:
        pool.stop()
    assert len(bound) == 32 and len(unschedulable) == 8  # 8 Nodes x 4 cpu
    assert overcommitted(objs, bound) == []
