"""A RayJob arrival in ``pumice simulate``: the real KubeRay controllers, Volcano gang scheduling of
the Ray Pods, and the simulated Ray dashboard run it for its duration."""

from __future__ import annotations

from pathlib import Path

from pumice.simulate import metrics
from pumice.simulate.nodes import NodeSpec
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload

WORKLOAD = """
arrivals:
  - at: 5
    duration: 300
    name: train
    manifest:
      apiVersion: ray.io/v1
      kind: RayJob
      metadata:
        labels: {volcano.sh/queue-name: default}
      spec:
        entrypoint: python train.py
        shutdownAfterJobFinishes: true
        rayClusterSpec:
          headGroupSpec:
            rayStartParams: {}
            template:
              spec:
                containers: [{name: ray-head, image: rayproject/ray:2.46.0,
                              resources: {requests: {cpu: "1", memory: 2Gi}}}]
          workerGroupSpecs:
            - groupName: gpu
              replicas: 2
              rayStartParams: {}
              template:
                spec:
                  containers: [{name: ray-worker, image: rayproject/ray:2.46.0,
                                resources: {requests: {cpu: "2", memory: 4Gi}}}]
"""


def test_a_rayjob_runs_its_duration_and_completes(tmp_path: Path) -> None:
    p = tmp_path / "w.yaml"
    p.write_text(WORKLOAD)
    nodes = [NodeSpec(f"n{i}", 4000, 16 * 1024**3, pods=20) for i in range(2)]
    r = simulate(SimConfig(nodes, load_workload(p)))
    jobs = {j["job"]: j for j in metrics.job_rows(r.recorder)}
    job = jobs["train"]
    assert r.ended_by == "done"
    assert job["status"] == "Succeeded"
    # the Ray job runs 300 s from the moment the whole Ray cluster runs; JCT adds the start-up
    assert job["jct"] >= 300
    assert job["jct"] < 300 + 60
    ray_pods = [p for p in metrics.pod_rows(r.recorder) if p["job"] == "train"]
    assert len(ray_pods) >= 3  # head + 2 workers (+ the submitter)
