"""RayJob and RayService arrivals in ``pumice simulate``: the real KubeRay controllers, Volcano gang
scheduling of the Ray Pods, and the simulated Ray dashboard (Jobs and Serve API, head Serve proxy)
run them; the recorder keeps each one's arrival, start, ready and finish."""

from __future__ import annotations

from pathlib import Path

import pytest

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


RAYSERVICE = """
  - at: 10
    duration: 600
    name: serve
    manifest:
      apiVersion: ray.io/v1
      kind: RayService
      metadata:
        labels: {volcano.sh/queue-name: default}
        annotations: {pumice.io/sim-serve-start-seconds: "30"}
      spec:
        serveConfigV2: |
          applications:
            - name: app
              import_path: model:app
              deployments: [{name: Model, num_replicas: 1}]
        rayClusterConfig:
          headGroupSpec:
            rayStartParams: {}
            template:
              spec:
                containers: [{name: ray-head, image: rayproject/ray:2.46.0,
                              resources: {requests: {cpu: "1", memory: 2Gi}}}]
          workerGroupSpecs:
            - groupName: cpu
              replicas: 1
              rayStartParams: {}
              template:
                spec:
                  containers: [{name: ray-worker, image: rayproject/ray:2.46.0,
                                resources: {requests: {cpu: "1", memory: 2Gi}}}]
"""


def _run_ray_workload(tmp_path: Path, service: str) -> tuple[object, dict[str, dict], list[dict]]:
    p = tmp_path / "w.yaml"
    p.write_text(WORKLOAD + service)
    nodes = [NodeSpec(f"n{i}", 4000, 16 * 1024**3, pods=20) for i in range(2)]
    r = simulate(SimConfig(nodes, load_workload(p)))
    return r, {j["job"]: j for j in metrics.job_rows(r.recorder)}, metrics.pod_rows(r.recorder)


def test_a_rayjob_and_a_rayservice_record_arrival_start_ready_and_finish(tmp_path: Path) -> None:
    r, jobs, pods = _run_ray_workload(tmp_path, RAYSERVICE)
    assert r.ended_by == "done"
    train, serve = jobs["train"], jobs["serve"]
    # the RayJob: its Ray job starts once the whole cluster is bound and runs 300 s; the RayJob
    # controller sees the end at its next status poll
    assert train["arrival"] == 5 and train["status"] == "Succeeded"
    assert train["arrival"] <= train["start"] <= train["ready"]
    assert 300 <= train["finish"] - train["ready"] < 305
    # the RayService: Ready once its Serve application runs (30 s after the controller put it,
    # which needs the cluster up) and the serve Service has endpoints; deleted after 600 s
    assert serve["kind"] == "RayService" and serve["arrival"] == 10
    assert serve["start"] >= serve["arrival"]
    assert serve["ready"] >= serve["start"] + 30
    assert serve["status"] == "Deleted" and serve["finish"] == 610 and serve["jct"] == 600
    serve_pods = [p for p in pods if p["job"] == "serve"]
    assert len(serve_pods) == 2  # head + 1 worker
    assert all(p["bind"] <= serve["ready"] and p["deleted"] >= serve["finish"] for p in serve_pods)
    assert round(r.end_time, 3) >= max(p["deleted"] for p in serve_pods)  # the run waits until its Pods are gone
    summary = metrics.summary(r.recorder, r.end_time, r.ended_by)
    assert summary["jobs"]["finished"] == 2
    waits = sorted([train["ready"] - train["arrival"], serve["ready"] - serve["arrival"]])
    assert summary["ready_delay"] == {"jobs": 2, "mean": pytest.approx(sum(waits) / 2, abs=1e-3),
                                      "median": pytest.approx(sum(waits) / 2, abs=1e-3), "p99": waits[1]}
    # both Ray clusters are Volcano gangs (minMember from their PodGroups), never partly bound
    assert summary["gang"]["gang_jobs"] == 2 and summary["gang"]["partial_gang_seconds"] == 0


def test_a_rayservice_without_duration_runs_until_the_end_and_does_not_hold_the_run(tmp_path: Path) -> None:
    r, jobs, _ = _run_ray_workload(tmp_path, RAYSERVICE.replace("    duration: 600\n", ""))
    assert r.ended_by == "done"
    serve = jobs["serve"]
    assert serve["ready"] is not None and serve["finish"] is None and serve["status"] == "Running"
    assert r.end_time < 400  # ended with the RayJob (finished near 320 s), not at a stall timeout


def test_the_readme_ray_workload_example_runs_and_records_gpus_and_readiness(tmp_path: Path) -> None:
    import csv
    import json

    from click.testing import CliRunner

    from pumice.cli.main import main
    from pumice.testing.paths import shared_dir

    example = Path(__file__).resolve().parents[2] / "docs/examples/ray-workload.yaml"
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(shared_dir() / "traces/tiresias-example/n1g4.csv"),
                                  "--workload", str(example), "--out", str(out), "--quiet", "--no-plots"])
    assert r.exit_code == 0, r.output
    jobs = {j["job"]: j for j in csv.DictReader((out / "jobs.csv").open())}
    assert (jobs["train"]["kind"], jobs["train"]["gpus"], jobs["train"]["status"]) == ("RayJob", "2.0", "Succeeded")
    assert float(jobs["train"]["finish"]) - float(jobs["train"]["ready"]) >= 600
    serve = jobs["serve"]
    assert (serve["kind"], serve["gpus"], serve["status"], serve["finish"]) == ("RayService", "1.0", "Deleted", "3720.0")
    assert float(serve["ready"]) >= float(serve["start"]) + 60
    assert json.loads((out / "summary.json").read_text())["ended_by"] == "done"
    # trial 5 F-11: the Ray Pods, deleted with their clusters (the RayJob's after its job succeeded,
    # the service's at its end), read "phase Failed": the kubelet's terminal phase for containers
    # it stopped (exit 143 on SIGTERM). pods.csv gives the phase before the deletion and how it ended
    pods = list(csv.DictReader((out / "pods.csv").open()))
    assert sorted(p["job"] for p in pods) == ["serve", "serve", "train", "train", "train"]
    assert {(p["phase"], p["status"]) for p in pods} == {("Running", "Deleted")}
    assert all(p["deleted"] for p in pods)


def _mode_arrival(name: str, mode: str, exit_code: int = 0) -> str:
    meta = f"\n      metadata: {{annotations: {{pumice.io/sim-exit-code: '{exit_code}'}}}}" if exit_code else ""
    return f"""
  - at: 0
    duration: 5
    name: {name}
    manifest:
      apiVersion: ray.io/v1
      kind: RayJob{meta}
      spec:
        entrypoint: python x.py
        submissionMode: {mode}
        rayClusterSpec:
          headGroupSpec:
            rayStartParams: {{}}
            template:
              spec:
                containers: [{{name: ray-head, image: rayproject/ray:2.46.0, resources: {{requests: {{cpu: "1"}}}}}}]
"""


def test_a_sidecar_mode_rayjob_ends_with_its_ray_job_like_a_k8sjob_mode_one(tmp_path: Path) -> None:
    """Trial 7 F-2: the head Pod's ``ray-job-submitter`` container never ended, so a SidecarMode
    RayJob ended only through the 300-s transition grace period (JCT ~318 s against 18 s)."""
    p = tmp_path / "w.yaml"
    p.write_text("arrivals:" + _mode_arrival("side", "SidecarMode") + _mode_arrival("k8s", "K8sJobMode"))
    nodes = [NodeSpec(f"n{i}", 4000, 16 * 1024**3, pods=20) for i in range(2)]
    r = simulate(SimConfig(nodes, load_workload(p)))
    jobs = {j["job"]: j for j in metrics.job_rows(r.recorder)}
    assert r.ended_by == "done"
    assert jobs["side"]["status"] == jobs["k8s"]["status"] == "Succeeded"
    assert abs(jobs["side"]["jct"] - jobs["k8s"]["jct"]) <= 5, (jobs["side"], jobs["k8s"])


def test_a_rayjob_whose_ray_job_fails_ends_with_it_in_either_submission_mode(tmp_path: Path) -> None:
    """Trial 8 F-7: a K8sJobMode submitter exited 1 on a FAILED job (its script ends with ``ray job
    logs --follow``, which exits 0), the submitter Job then started a retry Pod that never ended,
    and the RayJob became Failed only through the 300-s transition grace period (JCT 372 s against 72 s)."""
    p = tmp_path / "w.yaml"
    p.write_text("arrivals:" + _mode_arrival("k8s", "K8sJobMode", 1) + _mode_arrival("side", "SidecarMode", 1)
                 + _mode_arrival("ok", "K8sJobMode"))
    nodes = [NodeSpec(f"n{i}", 4000, 16 * 1024**3, pods=20) for i in range(3)]
    r = simulate(SimConfig(nodes, load_workload(p)))
    jobs = {j["job"]: j for j in metrics.job_rows(r.recorder)}
    assert r.ended_by == "done"
    assert (jobs["k8s"]["status"], jobs["side"]["status"], jobs["ok"]["status"]) == ("Failed", "Failed", "Succeeded")
    assert abs(jobs["k8s"]["jct"] - jobs["ok"]["jct"]) <= 5, (jobs["k8s"], jobs["ok"])
    assert abs(jobs["side"]["jct"] - jobs["ok"]["jct"]) <= 5, (jobs["side"], jobs["ok"])


def test_a_pod_with_one_container_ended_for_good_does_not_freeze_the_clock(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A SidecarMode RayJob that keeps its cluster (shutdownAfterJobFinishes false): the head Pod's
    submitter container ends for good (restartPolicy Never) while ray-head runs on. The node
    agent's Pod worker waited on every container's supervisor, the finished one too, so each wait
    returned at once: a busy loop at one instant, and a simulation with anything left to run never
    advanced its clock (t8fix saw it with --until). The run is bounded by a budget of event-loop
    iterations (this one needs a few hundred), so the old code fails here instead of hanging."""
    from pumice.simulate import runner

    budget = 50_000

    def counted_loop() -> object:
        loop = make_loop()
        run_once, n = loop._run_once, [0]  # type: ignore[attr-defined]  # asyncio's own

        def once() -> None:
            n[0] += 1
            if n[0] > budget:
                raise AssertionError(f"{budget} event-loop iterations at simulated {loop.time():.3f} s: the loop spins")
            run_once()

        loop._run_once = once  # type: ignore[attr-defined]
        return loop

    make_loop = runner._virtual_loop
    monkeypatch.setattr(runner, "_virtual_loop", counted_loop)
    p = tmp_path / "w.yaml"
    side = _mode_arrival("side", "SidecarMode").replace("submissionMode: SidecarMode",
                                                       "submissionMode: SidecarMode\n        shutdownAfterJobFinishes: false")
    p.write_text("arrivals:" + side + """
  - at: 0
    duration: 100
    name: long
    manifest:
      apiVersion: v1
      kind: Pod
      spec:
        schedulerName: volcano
        restartPolicy: Never
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
""")
    r = simulate(SimConfig([NodeSpec("n1", 4000, 16 * 1024**3, pods=20)], load_workload(p)))
    jobs = {j["job"]: j for j in metrics.job_rows(r.recorder)}
    assert (r.ended_by, jobs["side"]["status"], jobs["long"]["status"]) == ("done", "Succeeded", "Succeeded")
    assert jobs["long"]["finish"] == r.end_time >= 100  # the clock moved past the sidecar's end


SELECTOR_JOB = """
arrivals:
  - at: 0
    duration: 30
    name: on-existing
    manifest:
      apiVersion: ray.io/v1
      kind: RayJob
      metadata: {labels: {volcano.sh/queue-name: default}}
      spec: {entrypoint: python x.py, submissionMode: HTTPMode, clusterSelector: {ray.io/cluster: nosuch}}
"""


def test_a_cluster_selector_rayjob_is_left_without_a_cluster_spec_and_waits_for_its_cluster(tmp_path: Path) -> None:
    """A RayJob that runs on an existing RayCluster (clusterSelector, no rayClusterSpec) is given
    as written, not an invented empty cluster spec KubeRay refuses (trial 11 F-3); with no such
    cluster it waits, as upstream's controller requeues until the cluster exists."""
    p = tmp_path / "w.yaml"
    p.write_text(SELECTOR_JOB)
    w = load_workload(p)
    [arrival] = w.arrivals
    assert "rayClusterSpec" not in arrival.objects[0]["spec"] and arrival.tasks == 0
    r = simulate(SimConfig([NodeSpec("n0", 4000, 16 * 1024**3, pods=20)], w, until=60))
    [job] = metrics.job_rows(r.recorder)
    assert job["status"] == "Pending"  # was "Rejected: ValidationFailed: ... at least one container"
    assert not r.recorder.jobs["on-existing"].rejected_by
