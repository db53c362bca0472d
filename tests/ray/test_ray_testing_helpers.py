"""The real-Ray tests' helpers that need no Ray: the log digest a timed-out test prints
(pumice.testing.ray_logs) and the sample RayService they run (pumice.testing.rayservice)."""

from __future__ import annotations

from pathlib import Path

import yaml

from pumice.testing.fake_client import FakeClient
from pumice.testing.ray_logs import diagnosis, ray_log_digest
from pumice.testing.rayservice import MOUNT, sample_rayservice, serve_apps_configmap

from .conftest import ray_scheme

SESSION = "session_2026-12-01_22-46-33_665516_13666"

RAYLET_OUT = """\
[2026-12-01 22:46:36,001 I 14145 14145] (raylet) main.cc:100: Raylet started
[state-dump] NodeManager:
[state-dump] Node ID: 189e
[2026-12-01 22:47:08,040 W 14145 14145] (raylet) node_manager.cc:914: The lease with ID 0800 cannot be scheduled right now.
Required resources for this lease: {node:__internal_implicit_resource_fruit_app:MangoStand: 1, CPU: 0.1}
Available resources on this node: {"available": {CPU: [0]}}
[2026-12-01 22:47:09,000 I 14145 14145] (raylet) worker_pool.cc:1: Started worker
"""

DEBUG_STATE = """\
NodeManager:
InitialConfigResources: {object_store_memory: 6.15816e+08, memory: 2.14748e+09, CPU: 1}
Resource usage {
    - (language=PYTHON actor_or_taskServeReplica:math_app:Router.__init__ pid=14428): {CPU: 1}
}
Running tasks by scheduling class:
"""

CONTROLLER_LOG = "".join(
    f"WARNING 2026-12-01 22:{47 + i}:19,161 controller 14141 -- Deployment 'MangoStand' in application "
    "'fruit_app' has 1 replicas that have taken more than 30s to be scheduled.\n"
    f"INFO 2026-12-01 22:{47 + i}:20,000 controller 14141 -- still here\n" for i in range(3))


def ray_pod(pods: Path, pod: str, container: str, files: dict[str, str]) -> None:
    """A Pod directory as the process runtime leaves it, with Ray's logs in the container's /tmp."""
    cdir = pods / pod / container
    logs = cdir / "tmp" / "ray" / SESSION / "logs"
    (logs / "serve").mkdir(parents=True)
    (cdir / "tmp" / "ray" / "session_latest").symlink_to(f"/tmp/ray/{SESSION}")  # resolves in the Pod only
    (cdir / "0.log").write_text("2026-12-01T22:46:48Z stdout F Ray runtime started.\n")
    for name, text in files.items():
        (logs / name).write_text(text)


def test_the_digest_shows_what_holds_a_node_and_why_a_lease_waits(tmp_path: Path) -> None:
    ray_pod(tmp_path, "default_svc-worker_uid", "ray-worker",
            {"raylet.out": RAYLET_OUT, "debug_state.txt": DEBUG_STATE})
    text = ray_log_digest(tmp_path)
    assert "--- default_svc-worker_uid/ray-worker (" + SESSION + ")" in text
    assert "Ray runtime started." in text
    assert "InitialConfigResources: {object_store_memory: 6.15816e+08, memory: 2.14748e+09, CPU: 1}" in text
    assert "Router.__init__ pid=14428): {CPU: 1}" in text
    assert "cannot be scheduled right now" in text
    assert "Required resources for this lease: {node:__internal_implicit_resource_fruit_app:MangoStand: 1" in text
    assert "Raylet started" not in text and "Started worker" not in text  # INFO records are left out
    assert "[state-dump]" not in text


def test_the_digest_keeps_a_repeated_warning_once_with_its_count(tmp_path: Path) -> None:
    ray_pod(tmp_path, "default_svc-head_uid", "ray-head", {"serve/controller_14141.log": CONTROLLER_LOG})
    text = ray_log_digest(tmp_path)
    assert text.count("taken more than 30s to be scheduled") == 1
    assert "WARNING 2026-12-01 22:49:19,161" in text  # the last occurrence
    assert "(x3 since 2026-12-01 22:47:19,161)" in text
    assert "still here" not in text


def test_the_digest_says_when_there_is_no_ray_session(tmp_path: Path) -> None:
    (tmp_path / "default_plain_uid" / "main" / "tmp").mkdir(parents=True)
    assert ray_log_digest(tmp_path) == f"(no Ray logs under {tmp_path})"


async def test_the_diagnosis_has_the_objects_and_warning_events(tmp_path: Path) -> None:
    client = FakeClient(ray_scheme())
    await client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                         "spec": {"containers": [{"name": "c", "image": "i"}]},
                         "status": {"phase": "Running", "containerStatuses": [
                             {"name": "c", "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}})
    await client.create({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
                         "type": "Warning", "reason": "FailedToCreateRayCluster", "message": "no",
                         "involvedObject": {"kind": "RayService", "name": "svc"}})
    text = await diagnosis(client, tmp_path)
    assert "Pod p: Running" in text and "c=waiting(CrashLoopBackOff) restarts=2" in text
    assert "Warning RayService/svc FailedToCreateRayCluster: no" in text
    assert f"(no Ray logs under {tmp_path})" in text


def test_the_sample_rayservice_runs_our_apps_and_gives_the_router_a_tenth_of_a_cpu() -> None:
    rs = sample_rayservice()
    serve = yaml.safe_load(rs["spec"]["serveConfigV2"])
    deployments = {d["name"]: d for app in serve["applications"] for d in app["deployments"]}
    assert {app["runtime_env"]["working_dir"] for app in serve["applications"]} == {f"local://{MOUNT}"}
    assert {n: d["ray_actor_options"]["num_cpus"] for n, d in deployments.items()} == {
        n: 0.1 for n in ("MangoStand", "OrangeStand", "PearStand", "FruitMarket", "Adder", "Multiplier", "Router")}
    assert (deployments["MangoStand"]["num_replicas"], deployments["MangoStand"]["max_replicas_per_node"]) == (2, 1)
    cfg = rs["spec"]["rayClusterConfig"]
    for group in [cfg["headGroupSpec"], *cfg["workerGroupSpecs"]]:
        assert {"name": "serve-apps", "mountPath": MOUNT} in group["template"]["spec"]["containers"][0]["volumeMounts"]
    assert {"fruit.py", "conditional_dag.py"} <= set(serve_apps_configmap()["data"])
