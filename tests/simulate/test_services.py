"""Long-running services in ``pumice simulate``: Deployments and the Alibaba DLRM serving instances
(bare Pods deleted at the trace's deletion time) run until deleted, finish at the deletion, and do
not keep the run from ending."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from pumice.simulate import metrics
from pumice.simulate.nodes import GPU, NodeSpec
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import DLRM_CPU_NODE_AFFINITY, load_workload, sample
from pumice.testing.paths import shared_dir

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



@pytest.mark.timeout(120)
def test_services_without_an_end_run_to_until(tmp_path: Path) -> None:
    """A workload of services only (no ``duration``) ended ``done`` at its last arrival even with
    ``--until``: nothing was left that could end. With ``until`` the run goes on to it (one
    wake-up an hour, no stall: a steady service is not stuck); without, it still ends at once."""
    p = tmp_path / "w.yaml"
    p.write_text(DEPLOYMENT.replace("    duration: 2000\n", ""))
    wakes: list[float] = []
    r = simulate(SimConfig([NodeSpec("n1", 4000, 8 * 1024**3)], load_workload(p), until=7200.0),
                 progress=lambda t, *_: wakes.append(t))
    assert (r.ended_by, r.end_time) == ("until", 7200.0)
    (web,) = metrics.job_rows(r.recorder)
    assert (web["status"], web["start"], web["finish"]) == ("Running", 11.0, None)
    assert metrics.summary(r.recorder, r.end_time, r.ended_by)["allocation"]["cpu_ratio_mean"] == \
        pytest.approx(0.5 * (7200 - 11) / 7200, abs=1e-4)  # 2 of 4 cores from 11 s to the end
    assert len(wakes) < 10, wakes[:20]
    r = simulate(SimConfig([NodeSpec("n1", 4000, 8 * 1024**3)], load_workload(p)))
    assert (r.ended_by, r.end_time) == ("done", 10.0)

DLRM = shared_dir() / "traces/alibaba-clusterdata-gpu-v2025/disaggregated_DLRM_trace.csv"


def test_dlrm_instances_map_to_role_placed_pods_with_whole_gpus() -> None:
    w = load_workload(DLRM)
    by = {a.job: a for a in w.arrivals}
    hn, cn = by["instance-0"], next(a for a in w.arrivals if a.objects[0]["spec"].get("affinity"))
    hn_pod, cn_pod = hn.objects[0], cn.objects[0]
    assert hn_pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "12", "memory": "120Gi", GPU: "1"}
    assert "affinity" not in hn_pod["spec"] and hn.gpus == 1
    assert cn_pod["spec"]["affinity"] == DLRM_CPU_NODE_AFFINITY and cn.gpus == 0
    assert hn_pod["spec"]["priorityClassName"] == "openb-ls"
    assert (hn.time, hn.duration, hn.delete_after) == (0.0, None, None)  # there before the window, outlives it


def _dlrm_cluster() -> list[NodeSpec]:
    """Four CPU Nodes (no GPU model) and four 8-GPU Nodes: room for every sampled instance."""
    cpu = [NodeSpec(f"cn-{i}", 200_000, 1024 * 1024**3) for i in range(4)]
    gpu = [NodeSpec(f"hn-{i}", 96_000, 768 * 1024**3, gpus=8, gpu_model="A100") for i in range(4)]
    return cpu + gpu


@pytest.mark.timeout(300)
def test_a_dlrm_sample_runs_each_instance_from_creation_until_deletion_on_its_kind_of_node() -> None:
    src = {r["instance_sn"].replace("_", "-"): r for r in csv.DictReader(DLRM.open())}
    w = sample(load_workload(DLRM), 40, seed=3)
    rows = [src[a.job] for a in w.arrivals]
    # the sample has each kind of life: there at the start, arriving later, deleted, outliving the trace
    assert {bool(r["creation_time"]) for r in rows} == {True, False}
    assert {bool(r["deletion_time"]) for r in rows} == {True, False}
    assert {r["role"] for r in rows} == {"CN", "HN"}
    r = simulate(SimConfig(_dlrm_cluster(), w))
    assert r.ended_by == "done"
    pods = {p["job"]: p for p in metrics.pod_rows(r.recorder)}
    last_deletion = 0.0
    for j in metrics.job_rows(r.recorder):
        row = src[j["job"]]
        assert j["arrival"] == pytest.approx(float(row["creation_time"] or 0), abs=1e-3)
        assert j["start"] is not None and j["queueing_delay"] <= 1.0  # room for all: bound at the next session
        pod = pods[j["job"]]
        assert pod["node"].startswith("cn-" if row["role"] == "CN" else "hn-")
        if row["deletion_time"]:
            deleted = float(row["deletion_time"])
            last_deletion = max(last_deletion, deleted)
            assert (j["status"], j["finish"]) == ("Deleted", pytest.approx(deleted, abs=1e-3))
            assert j["jct"] == pytest.approx(deleted - j["arrival"], abs=1e-3)  # a service's lifetime
            assert pod["deleted"] >= j["finish"]
        else:  # outlives the trace: still running when the run ends, which it does not hold up
            assert (j["status"], j["finish"], pod["phase"]) == ("Running", None, "Running")
    assert last_deletion <= r.end_time < last_deletion + 60
    summary = metrics.summary(r.recorder, r.end_time, r.ended_by)
    assert summary["jobs"]["finished"] == sum(1 for x in rows if x["deletion_time"])
