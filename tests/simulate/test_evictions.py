"""A vcjob whose Pod is evicted (reclaim) is re-created by its controller under the same name; the
recorder keeps both Pods and the job ends when the re-created Pod does (trial-8 F-8)."""

from __future__ import annotations

from pathlib import Path

import yaml

from pumice.simulate import metrics
from pumice.simulate.nodes import NodeSpec
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload


def _vcjobs(name: str, queue: str, at: int, count: int, duration: int) -> dict:
    template = {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "4"}}}]}}
    return {"name": name, "at": at, "count": count, "every": 1, "duration": duration, "manifest": {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "spec": {"minAvailable": 1, "queue": queue, "schedulerName": "volcano",
                 "tasks": [{"name": "t", "replicas": 1, "template": template}]}}}


RECLAIM_CONF = """actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def test_a_reclaimed_vcjob_runs_again_and_ends_when_its_new_pod_does(tmp_path: Path) -> None:
    # one 40-cpu Node: qa's ten 4-cpu jobs fill it; two qb jobs (weight 3) arrive, overcommit's 1.2 lets
    # them in, and reclaim evicts qa Pods for them
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump({"arrivals": [_vcjobs("qa", "qa", 0, 10, 1000), _vcjobs("qb", "qb", 100, 2, 100)]}))
    conf = tmp_path / "reclaim.conf"
    conf.write_text(RECLAIM_CONF)
    queues = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": q},
               "spec": {"weight": weight, "reclaimable": True}} for q, weight in (("qa", 1), ("qb", 3))]
    r = simulate(SimConfig([NodeSpec("n1", 40000, 256 * 1024**3, pods=40)], load_workload(w),
                           scheduler_conf=str(conf), queues=queues))
    jobs = {j["job"]: j for j in metrics.job_rows(r.recorder)}
    pods = metrics.pod_rows(r.recorder)
    evicted = sorted(j for j, row in jobs.items() if row["evictions"])
    assert r.recorder.reclaims > 0 and evicted, jobs
    for name in evicted:
        mine = [p for p in pods if p["job"] == name]
        # the evicted Pod and its re-created namesake, each its own row
        assert [p["status"] for p in mine] == ["Evicted", "Succeeded"], mine
        assert mine[1]["pod"] == mine[0]["pod"] + "#2"
        # the job ended with its re-created Pod, a whole 1000-s run after the reclaim
        assert jobs[name]["finish"] == mine[1]["finish"] >= 100 + 1000
        assert jobs[name]["status"] == "Succeeded"
    assert max(j["finish"] for j in jobs.values()) == r.end_time
