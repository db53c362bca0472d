"""A Volcano Job restarted by its lifecycle policy ends with its phase, not with its first failed
Pod (trial-8 F-8, second half): the recorder takes a vcjob's end and outcome from
``status.state.phase`` and its restarts from ``status.retryCount``."""

from __future__ import annotations

from pathlib import Path

import yaml

from pumice.simulate import metrics
from pumice.simulate.nodes import NodeSpec
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload


def _vcjob(name: str, duration: int, exit_codes: str, max_retry: int) -> dict:
    template = {"metadata": {"annotations": {"pumice.io/sim-exit-code": exit_codes}},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
    return {"name": name, "at": 0, "duration": duration, "manifest": {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "spec": {"minAvailable": 1, "queue": "default", "schedulerName": "volcano", "maxRetry": max_retry,
                 "policies": [{"event": "PodFailed", "action": "RestartJob"}],
                 "tasks": [{"name": "t", "replicas": 1, "template": template}]}}}


def test_a_vcjob_restarted_by_its_policy_ends_with_its_phase(tmp_path: Path) -> None:
    # flaky: its Pod fails the first run (exit 1) and succeeds the second (exit 0), maxRetry 3;
    # doomed: fails every run, maxRetry 2
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump({"arrivals": [_vcjob("flaky", 50, "1,0", 3), _vcjob("doomed", 30, "1", 2)]}))
    r = simulate(SimConfig([NodeSpec("n1", 4000, 16 * 1024**3, pods=10)], load_workload(w)))
    jobs = {j["job"]: j for j in metrics.job_rows(r.recorder)}
    pods = {p["pod"]: p for p in metrics.pod_rows(r.recorder)}
    # By hand, 1-s scheduling period, start latency 0: the controller makes each Job's PodGroup at 0,
    # the session at 1 enqueues it, the Pod is created then and bound by the session at 2; it runs
    # its duration. Its failure restarts the Job (RestartJob: the Pod and PodGroup go, retryCount 1,
    # a new PodGroup), which the next session enqueues one period later, and its new Pod (the same
    # name) is bound one period after that: a restart costs 2 s.
    # flaky: fails at 2 + 50 = 52; new PodGroup enqueued at 53, Pod bound at 54, succeeds at 104:
    # the Job is Completed at 104 (the old recorder ended it Failed at 52).
    assert (pods["default/flaky-t-0"]["finish"], pods["default/flaky-t-0"]["status"]) == (52.0, "Failed")
    assert (pods["default/flaky-t-0#2"]["bind"], pods["default/flaky-t-0#2"]["finish"]) == (54.0, 104.0)
    assert pods["default/flaky-t-0#2"]["status"] == "Succeeded"
    assert (jobs["flaky"]["finish"], jobs["flaky"]["jct"], jobs["flaky"]["status"]) == (104.0, 104.0, "Succeeded")
    assert (jobs["flaky"]["start"], jobs["flaky"]["queueing_delay"]) == (2.0, 2.0)  # the first gang bind
    # doomed: fails at 32; bound again at 34, fails at 64: that RestartJob makes retryCount 2 =
    # maxRetry, so the Job goes Failed at 64 without a third run (the old recorder: Failed at 32)
    assert [p["status"] for k, p in sorted(pods.items()) if p["job"] == "doomed"] == ["Failed", "Failed"]
    assert (jobs["doomed"]["finish"], jobs["doomed"]["jct"], jobs["doomed"]["status"]) == (64.0, 64.0, "Failed")
    assert r.ended_by == "done" and r.end_time == 104.0
    # status.retryCount: flaky restarted once; doomed's second RestartJob counts too
    assert (jobs["flaky"]["restarts"], jobs["doomed"]["restarts"]) == (1, 2)
    assert metrics.summary(r.recorder, r.end_time, r.ended_by)["restarts"] == {"jobs": 2, "total": 3}
