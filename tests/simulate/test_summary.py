"""The summary's numbers against a small case computed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.simulate import metrics
from pumice.simulate.nodes import NodeSpec
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload

# One Node with 2 cpu. a (1 cpu, 100 s) and b (1 cpu, 50 s) arrive at 0, c (2 cpu, 30 s) at 10.
WORKLOAD = """
arrivals:
  - {at: 0, duration: 100, name: a, manifest: &pod {apiVersion: v1, kind: Pod, metadata: {},
     spec: {schedulerName: volcano, restartPolicy: Never,
            containers: [{name: main, image: sim, resources: {requests: {cpu: "1", memory: 1Gi}}}]}}}
  - {at: 0, duration: 50, name: b, manifest: *pod}
  - at: 10
    duration: 30
    name: c
    manifest:
      apiVersion: v1
      kind: Pod
      metadata: {}
      spec:
        schedulerName: volcano
        restartPolicy: Never
        containers: [{name: main, image: sim, resources: {requests: {cpu: "2", memory: 1Gi}}}]
"""


def test_summary_matches_the_hand_computed_case(tmp_path: Path) -> None:
    p = tmp_path / "w.yaml"
    p.write_text(WORKLOAD)
    r = simulate(SimConfig([NodeSpec("n1", 2000, 8 * 1024**3, pods=10)], load_workload(p)))
    jobs = {j["job"]: j for j in metrics.job_rows(r.recorder)}
    s = metrics.summary(r.recorder, r.end_time, r.ended_by)
    # By hand, with the 1 s scheduling period: a Pod created at t gets its PodGroup at t and is
    # bound by the first session at least one period after the previous one: a and b at 1;
    # both run at once (start latency 0): b ends at 51, a at 101; c (2 cpu) fits only once a
    # ended: bound at 101 + the session that the change triggers, 102 at the latest.
    assert (jobs["a"]["start"], jobs["a"]["finish"]) == (1.0, 101.0)
    assert (jobs["b"]["start"], jobs["b"]["finish"]) == (1.0, 51.0)
    c_start = jobs["c"]["start"]
    assert 101.0 <= c_start <= 102.0
    assert jobs["c"]["finish"] == c_start + 30
    assert r.ended_by == "done"
    jct = [101.0, 51.0, c_start + 30 - 10]
    delay = [1.0, 1.0, c_start - 10]
    assert s["jct"]["mean"] == pytest.approx(sum(jct) / 3, abs=1e-3)
    assert s["jct"]["median"] == sorted(jct)[1]
    assert s["jct"]["p99"] == max(jct)  # nearest rank: ceil(0.99 * 3) = 3rd
    assert s["queueing_delay"]["mean"] == pytest.approx(sum(delay) / 3, abs=1e-3)
    assert s["queueing_delay"]["p99"] == max(delay)
    assert s["makespan"] == c_start + 30
    end = s["simulated_seconds"]
    # cpu held: 2 cores over [1, 51), 1 over [51, 101), 2 over [c_start, c_start + 30)
    held = 2 * 50 + 1 * 50 + 2 * 30
    assert s["allocation"]["cpu_ratio_mean"] == pytest.approx(held / 2 / end, abs=1e-4)
    assert s["gang"]["partial_gang_seconds"] == 0.0
    assert s["jobs"] == {"total": 3, "finished": 3, "started": 3, "never_started": 0, "rejected": 0}


def test_sessions_run_at_the_tick_after_a_change_and_not_for_an_idle_release(tmp_path: Path) -> None:
    """The same case, counting sessions: the one at start (0); the tick after a and b arrive (1:
    both bound); the tick after c arrives (11: it does not fit); the tick after b ends (52: c
    waits, still no room); the tick after a ends (102: c bound). c's end at 132 frees room while
    nothing waits: no session. A Pod and the PodGroup made for it at one instant cost one session,
    as does a job's end and its clean-up."""
    p = tmp_path / "w.yaml"
    p.write_text(WORKLOAD)
    r = simulate(SimConfig([NodeSpec("n1", 2000, 8 * 1024**3, pods=10)], load_workload(p)))
    assert r.ended_by == "done"
    assert r.recorder.sessions == 5


def _pod(name: str, phase: str, *, node: str = "n1", deleting: bool = False, disrupted: bool = False) -> dict:
    md: dict = {"name": name, "namespace": "default", "labels": {"pumice.io/sim-job": name}}
    if deleting:
        md["deletionTimestamp"] = "2023-11-14T22:13:30Z"
    status: dict = {"phase": phase}
    if disrupted:
        status["conditions"] = [{"type": "DisruptionTarget", "status": "True"}]
    return {"metadata": md, "spec": {"nodeName": node, "containers": [{"name": "c"}]}, "status": status}


def test_pods_report_their_phase_before_deletion_and_how_they_ended() -> None:
    """Trial 5 F-11: a Pod deleted while Running (a RayCluster torn down after its RayJob
    succeeded) ends with the kubelet's phase Failed for the containers it stopped; pods.csv read
    ``Failed``. ``phase`` is now the one before the deletion and ``status`` says how it ended."""
    from pumice._util.clock import FakeClock
    from pumice.simulate.recorder import Recorder
    from pumice.simulate.workload import Arrival

    clock = FakeClock()
    names = ("deleted", "evicted", "done", "done-then-deleted", "failed", "running", "deleted-pending")
    rec = Recorder(clock, clock.now(), [NodeSpec("n1", 8000, 8 * 1024**3)],
                   {n: Arrival(0.0, n, "Pod", ()) for n in names})
    for n in names:
        rec.pod_event(_pod(n, "Pending", node="" if n == "deleted-pending" else "n1"))
    clock.advance(1)
    for n in names[:-1]:
        rec.pod_event(_pod(n, "Running"))
    clock.advance(10)
    # deleted by its owner: deletionTimestamp, then the kubelet's Failed (exit 143), then gone
    rec.pod_event(_pod("deleted", "Running", deleting=True))
    rec.pod_event(_pod("deleted", "Failed", deleting=True))
    rec.pod_event(_pod("deleted", "Failed", deleting=True), deleted=True)
    # evicted (preempt/reclaim: a DisruptionTarget condition with the deletion)
    rec.pod_event(_pod("evicted", "Running", deleting=True, disrupted=True))
    rec.pod_event(_pod("evicted", "Failed", deleting=True, disrupted=True), deleted=True)
    rec.pod_event(_pod("done", "Succeeded"))
    rec.pod_event(_pod("done-then-deleted", "Succeeded"))
    rec.pod_event(_pod("done-then-deleted", "Succeeded", deleting=True), deleted=True)
    rec.pod_event(_pod("failed", "Failed"))
    rec.pod_event(_pod("deleted-pending", "Pending", node=""), deleted=True)  # removed at once, never bound
    rows = {r["job"]: (r["phase"], r["status"]) for r in metrics.pod_rows(rec)}
    assert rows == {"deleted": ("Running", "Deleted"), "evicted": ("Running", "Evicted"),
                    "done": ("Succeeded", "Succeeded"), "done-then-deleted": ("Succeeded", "Succeeded"),
                    "failed": ("Failed", "Failed"), "running": ("Running", "Running"),
                    "deleted-pending": ("Pending", "Deleted")}
    # what the jobs saw is unchanged: a bare Pod ended by a deletion is a job that did not succeed
    jobs = {j["job"]: j["status"] for j in metrics.job_rows(rec)}
    assert jobs["deleted"] == jobs["evicted"] == "Failed" and jobs["done-then-deleted"] == "Succeeded"


def _bare_pod(queue: str) -> str:
    return ("{apiVersion: v1, kind: Pod, metadata: {annotations: {scheduling.volcano.sh/queue-name: " + queue + "}}, "
            "spec: {schedulerName: volcano, restartPolicy: Never, containers: [{name: main, image: sim, "
            "resources: {requests: {cpu: '1', memory: 1Gi}}}]}}")


QUEUES = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": n},
           "spec": {"weight": w, "reclaimable": True}} for n, w in (("qa", 1), ("qb", 3))]


def test_queue_shares_on_a_cpu_only_cluster_are_cpu_shares_computed_by_hand(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Trial 5 F-6: on a cluster without GPUs the queue table held a GPU allocated share (0) next
    to a CPU deserved share under the name ``deserved_gpu_share``, and a queue kept its last
    deserved share after its jobs were gone (the shares summed to more than 1).

    One Node of 4 cpu; qa (weight 1): a (1 cpu, 50 s) at 0; qb (weight 3): b-0, b-1 (1 cpu, 100 s)
    at 0 and c (1 cpu, 10 s) at 60. Proportion splits 4 cpu 1:3 and caps each queue at what it
    requests: at the session at 1, qa 1 cpu (0.25), qb 2 (0.5); a ends at 51 (nothing waits: no
    session); at the session at 61 qa has no job (deserved 0) and qb requests 3 (0.75). b ends at
    101, the end."""
    p = tmp_path / "w.yaml"
    p.write_text(f"arrivals:\n- {{at: 0, duration: 50, name: a, manifest: {_bare_pod('qa')}}}\n"
                 f"- {{at: 0, duration: 100, count: 2, name: b, manifest: {_bare_pod('qb')}}}\n"
                 f"- {{at: 60, duration: 10, name: c, manifest: {_bare_pod('qb')}}}\n")
    r = simulate(SimConfig([NodeSpec("n1", 4000, 8 * 1024**3, pods=10)], load_workload(p), queues=QUEUES))
    assert (r.ended_by, r.end_time) == ("done", 101.0)
    jobs = {j["job"]: j for j in metrics.job_rows(r.recorder)}
    assert (jobs["a"]["start"], jobs["b-0"]["start"], jobs["c"]["start"]) == (1.0, 1.0, 61.0)
    q = metrics.summary(r.recorder, r.end_time, r.ended_by)["queues"]
    end = 101.0
    assert q == {
        "qa": {"jobs": 1, "allocated_cpu_share": pytest.approx(0.25 * 50 / end, abs=1e-4),
               "deserved_cpu_share": pytest.approx(0.25 * 60 / end, abs=1e-4)},
        "qb": {"jobs": 3, "allocated_cpu_share": pytest.approx((0.5 * 100 + 0.25 * 10) / end, abs=1e-4),
               "deserved_cpu_share": pytest.approx((0.5 * 60 + 0.75 * 40) / end, abs=1e-4)},
    }
    assert r.recorder.deserved["qa"][-1] == (61.0, 0.0, 0.0)
    # queues.png was an empty "GPU share allocated" axis: now one CPU panel, both queues, both lines
    import matplotlib.pyplot as plt

    from pumice.simulate.report import write_run

    figures: list = []
    close = plt.close
    monkeypatch.setattr(plt, "close", figures.append)
    write_run(r, tmp_path / "out")
    monkeypatch.setattr(plt, "close", close)
    (queues_fig,) = [f for f in figures if any("share of the" in a.get_ylabel() for a in f.axes)]
    (ax,) = queues_fig.axes
    assert ax.get_ylabel() == "share of the CPU"
    assert ax.get_legend_handles_labels()[1] == ["qa allocated", "qa deserved", "qb allocated", "qb deserved"]
    for f in figures:
        plt.close(f)


def _vcjob(queue: str) -> str:
    return ("{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, spec: {minAvailable: 1, schedulerName: volcano, "
            f"queue: {queue}, tasks: [{{name: w, replicas: 1, template: {{spec: {{restartPolicy: Never, containers: "
            "[{name: c, image: x, resources: {requests: {cpu: '1', memory: 1Gi}}}]}}}]}}")


def test_queue_weights_barely_bind_vcjobs_as_in_upstream_volcano(tmp_path: Path) -> None:
    """Trial 5 F-6, the weight-1 queue running as much as the weight-3 one: not a proportion bug.
    Proportion caps a queue's deserved share at what it requests, and a vcjob requests nothing
    until enqueue admits it and its Pods exist; enqueue admits by the queues' share order, which
    admission does not move, within overcommit's budget (1.2x the cluster), not by weight. So
    with the same backlog each queue deserves, and gets, its admitted demand: about half
    (upstream enqueue.go, proportion.go, overcommit.go; README "Queue shares")."""
    p = tmp_path / "w.yaml"
    p.write_text(f"arrivals:\n- {{at: 0, every: 1, count: 8, duration: 100, name: a, manifest: {_vcjob('qa')}}}\n"
                 f"- {{at: 0, every: 1, count: 8, duration: 100, name: b, manifest: {_vcjob('qb')}}}\n")
    r = simulate(SimConfig([NodeSpec("n1", 4000, 8 * 1024**3, pods=20)], load_workload(p), queues=QUEUES))
    q = metrics.summary(r.recorder, r.end_time, r.ended_by)["queues"]
    assert r.ended_by == "done"
    assert q["qa"]["allocated_cpu_share"] == q["qb"]["allocated_cpu_share"]  # the same work, done at the same pace
    assert abs(q["qa"]["deserved_cpu_share"] - q["qb"]["deserved_cpu_share"]) < 0.05, q
    # the first four arrive one by one into an empty cluster (2 + 2); when they end, both queues
    # are at share 1 (allocated = deserved = admitted demand) and admission ties go to the older
    # queue: qa's next four are admitted before any of qb's. The trial saw the same (qa 14, qb 10
    # starts in the first 1,513 s)
    starts = sorted((j["start"], j["job"]) for j in metrics.job_rows(r.recorder))
    assert [job[0] for _t, job in starts[:8]] == ["a", "b", "a", "b", "a", "a", "a", "a"], starts


def test_deserved_shares_follow_a_new_deserved_of_a_queue() -> None:
    """Recorder.session keeps each queue's shares for the deserved Resource it last saw; a new
    Resource (a new deserved) is shared out again, also when it is another object with other
    amounts for the same queue (the stale case)."""
    from pumice._util.clock import FakeClock
    from pumice.scheduler.volcano.api.resource import Resource
    from pumice.simulate.recorder import Recorder

    clock = FakeClock()
    rec = Recorder(clock, clock.now(), [NodeSpec("n1", 8000, 8 * 1024**3, gpus=4)], {})
    first = Resource(2000, 0, {"nvidia.com/gpu": 1000})
    rec.session([], {"q": {"deserved": first}})
    clock.advance(1)
    rec.session([], {"q": {"deserved": first}})  # the same object: no new step
    clock.advance(1)
    rec.session([], {"q": {"deserved": Resource(4000, 0, {"nvidia.com/gpu": 2000})}})
    clock.advance(1)
    rec.session([], {})  # no job in the queue: 0
    assert rec.deserved["q"] == [(0.0, 0.25, 0.25), (2.0, 0.5, 0.5), (3.0, 0.0, 0.0)]


def test_deserved_shares_of_equal_amounts_in_a_new_resource_are_the_same_shares() -> None:
    """Proportion hands a new deserved Resource every session: one with the amounts of the last
    one gives its shares (no new step), also after the queue deserved nothing meanwhile; one
    whose GPU share sums two GPU resources is shared out again; a queue given no deserved
    Resource (None) deserves nothing then."""
    from pumice._util.clock import FakeClock
    from pumice.scheduler.volcano.api.resource import Resource
    from pumice.simulate.recorder import Recorder

    clock = FakeClock()
    rec = Recorder(clock, clock.now(), [NodeSpec("n1", 8000, 8 * 1024**3, gpus=4)], {})
    rec.session([], {"q": {"deserved": Resource(2000, 0, {"nvidia.com/gpu": 1000, "pods": 2})}})
    clock.advance(1)
    rec.session([], {"q": {"deserved": Resource(2000, 0, {"pods": 2, "nvidia.com/gpu": 1000})},
                     "r": {"deserved": Resource(8000, 0, {})}})
    clock.advance(1)
    rec.session([], {"q": {"deserved": None}, "r": {"deserved": Resource(8000, 0, {})}})
    clock.advance(1)
    rec.session([], {"q": {"deserved": Resource(2000, 0, {"pods": 2, "nvidia.com/gpu": 1000})}})
    clock.advance(1)
    two = {"nvidia.com/gpu": 1000, "volcano.sh/gpu-number": 1000}
    rec.session([], {"q": {"deserved": Resource(2000, 0, two)}})
    clock.advance(1)
    rec.session([], {"q": {"deserved": Resource(2000, 0, {**two, "volcano.sh/gpu-number": 2000})}})
    assert rec.deserved["q"] == [(0.0, 0.25, 0.25), (2.0, 0.0, 0.0), (3.0, 0.25, 0.25), (4.0, 0.25, 0.5),
                                 (5.0, 0.25, 0.75)]
    assert rec.deserved["r"] == [(1.0, 1.0, 0.0), (3.0, 0.0, 0.0)]
