"""Acceptance: Philly via Pollux runs with one Queue per VC."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pumice.simulate import metrics
from pumice.simulate.nodes import load_nodes
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload, sample
from pumice.testing.paths import shared_dir


def test_philly_jobs_run_in_one_queue_per_vc(tmp_path: Path) -> None:
    spec = tmp_path / "n8g8.csv"
    spec.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,8,8,64,512\n")
    w = load_workload(shared_dir() / "traces/philly-via-pollux/philly.csv")
    w = replace(w, arrivals=[a for a in w.arrivals if a.gpus <= 16])
    w = sample(w, 30, seed=1)
    w = replace(w, arrivals=[replace(a, time=a.time - w.arrivals[0].time) for a in w.arrivals])
    r = simulate(SimConfig(load_nodes(spec), w))
    s = metrics.summary(r.recorder, r.end_time, r.ended_by)
    jobs = metrics.job_rows(r.recorder)
    assert r.ended_by == "done"
    assert s["jobs"]["finished"] == 30
    vcs = {a.queue for a in w.arrivals}
    assert len(vcs) > 1 and all(q.startswith("vc-") for q in vcs)
    assert {j["queue"] for j in jobs} == vcs
    assert set(s["queues"]) == vcs  # each VC is its own Queue, with its allocated and deserved share
    pods = metrics.pod_rows(r.recorder)
    assert {p["queue"] for p in pods} == vcs
    assert s["gang"]["partial_gang_seconds"] == 0.0
