"""Long-running services in ``pumice simulate``: Deployments and the Alibaba DLRM serving instances
(bare Pods deleted at the trace's deletion time) run until deleted, finish at the deletion, and do
not keep the run from ending."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.simulate import metrics
from pumice.simulate.nodes import NodeSpec
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload

DEPLOYMENT = """
arrivals:
  - at: 10
    duration: 2000
    name: web
    manifest:
      apiVersion: apps/v1
      kind: Deployment
      spec:
        replicas: 2
        selector: {matchLabels: {app: web}}
        template:
          metadata: {labels: {app: web}}
          spec:
            schedulerName: volcano
            containers: [{name: main, image: pumice.io/simulated, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


@pytest.mark.timeout(120)
def test_a_service_living_longer_than_the_stall_window_ends_at_its_deletion_without_spinning(tmp_path: Path) -> None:
    """Nothing counts down while a service runs (its Pods have no duration). Once a first service
    had ended, the run's watcher stopped sleeping 600 s (the stall window) later, because a
    deletion was still pending, and woke on every loop turn until the last one: tens of thousands
    of turns for a 2,000-s service (the DLRM trace crawled). It wakes when a job ends and hourly."""
    p = tmp_path / "w.yaml"
    p.write_text(DEPLOYMENT + DEPLOYMENT.replace("- at: 10", "- at: 0").replace("2000", "100")
                 .replace("name: web", "name: short").replace("arrivals:\n", ""))
    wakes: list[float] = []
    r = simulate(SimConfig([NodeSpec("n1", 4000, 8 * 1024**3)], load_workload(p)),
                 progress=lambda t, *_: wakes.append(t))
    jobs = {j["job"]: j for j in metrics.job_rows(r.recorder)}
    web = jobs["web"]
    assert r.ended_by == "done"
    assert (web["arrival"], web["finish"], web["status"], web["jct"]) == (10, 2010, "Deleted", 2000)
    assert jobs["short"]["finish"] == 100
    pods = [p for p in metrics.pod_rows(r.recorder) if p["job"] == "web"]
    assert len(pods) == 2 and all(p["deleted"] >= 2010 for p in pods)
    assert len(wakes) < 10, wakes[:20]
