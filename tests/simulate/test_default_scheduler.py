"""Pods for Kubernetes' default scheduler in a YAML workload (found by hand after trial 5).

A Pod or Deployment without ``schedulerName: volcano`` is the default scheduler's, as on
Kubernetes; the simulator started that scheduler only for RayJobs and RayServices, so such Pods
waited forever (and a workload of them alone ended at 0 s with a Pending Pod).
"""

from __future__ import annotations

import warnings
from pathlib import Path

from pumice.simulate import metrics
from pumice.simulate.report import write_run
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload

from .conftest import two_nodes_two_slots

POD = ("{apiVersion: v1, kind: Pod, spec: {restartPolicy: Never, containers: "
       "[{name: a, image: b, resources: {requests: {cpu: '1'}}}]}}")
DEPLOYMENT = ("{apiVersion: apps/v1, kind: Deployment, spec: {replicas: 2, selector: {matchLabels: {app: web}}, "
              "template: {metadata: {labels: {app: web}}, spec: {containers: "
              "[{name: a, image: b, resources: {requests: {cpu: '1'}}}]}}}}")


def test_a_pod_without_scheduler_name_runs_on_the_default_scheduler(tmp_path: Path) -> None:
    w = tmp_path / "w.yaml"
    w.write_text(f"arrivals:\n- {{at: 0, duration: 10, name: plain, manifest: {POD}}}\n")
    r = simulate(SimConfig(two_nodes_two_slots(), load_workload(w)))
    assert r.ended_by == "done"
    (job,) = metrics.job_rows(r.recorder)
    assert job["status"] == "Succeeded"
    assert job["bind"] is not None and job["finish"] >= 10


def test_a_deployment_without_scheduler_name_gets_its_pods_placed(tmp_path: Path) -> None:
    w = tmp_path / "w.yaml"
    w.write_text(f"arrivals:\n- {{at: 0, duration: 30, name: web, manifest: {DEPLOYMENT}}}\n")
    r = simulate(SimConfig(two_nodes_two_slots(), load_workload(w), until=20.0))
    pods = [p for p in metrics.pod_rows(r.recorder) if p["job"] == "web"]
    assert len(pods) == 2
    assert all(p["node"] and p["bind"] is not None for p in pods)


def test_the_utilization_plot_of_a_run_with_no_sample_warns_nothing(tmp_path: Path) -> None:
    """A run that ends at 0 s has no allocation sample: no legend, no matplotlib warning."""
    w = tmp_path / "w.yaml"
    # a service (no duration) with nothing else to wait for: the run ends at once
    w.write_text(f"arrivals:\n- {{at: 0, name: svc, manifest: {POD}}}\n")
    r = simulate(SimConfig(two_nodes_two_slots(), load_workload(w)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_run(r, tmp_path / "out", plots=True)
    assert (tmp_path / "out/utilization.png").stat().st_size > 0
