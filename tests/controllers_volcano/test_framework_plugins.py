"""The distributed-framework job plugins: exactly what upstream injects (the expectations of
volcano pkg/controllers/job/plugins/distributed-framework/*/*_test.go where ported, marked
``upstream``; the rest are pumice's own cases)."""

from __future__ import annotations

import json

import pytest

from pumice.controllers.volcano.job.plugins import build

PT = "volcano pkg/controllers/job/plugins/distributed-framework"


def job(name: str, *tasks: tuple[str, int]) -> dict:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"tasks": [{"name": t, "replicas": r, "template": {"spec": {"containers": [{"name": "c"}]}}} for t, r in tasks]}}


def pod(name: str, task: str, *, labels: dict | None = None, env: list | None = None) -> dict:
    c: dict = {"name": "c"}
    if env:
        c["env"] = env
    return {"metadata": {"name": name, "annotations": {"volcano.sh/task-spec": task}, "labels": labels or {}},
            "spec": {"containers": [c]}}


@pytest.mark.upstream(f"{PT}/pytorch/pytorch_test.go: test master pod without port")
def test_pytorch_master_gets_addr_port_world_size_rank_zero_and_the_port() -> None:
    p = pod("test-pytorch-master-0", "master")
    build("pytorch", []).on_pod_create(p, job("test-pytorch", ("master", 1), ("worker", 1)))
    c = p["spec"]["containers"][0]
    assert c["env"] == [{"name": "MASTER_ADDR", "value": "test-pytorch-master-0.test-pytorch"},
                        {"name": "MASTER_PORT", "value": "23456"}, {"name": "WORLD_SIZE", "value": "2"},
                        {"name": "RANK", "value": "0"}]
    assert c["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]


def test_pytorch_worker_rank_is_its_index_plus_one_and_wait_master_is_opt_in() -> None:
    p = pod("test-pytorch-worker-2", "worker")
    build("pytorch", ["--port=5000", "--wait-master-enabled=true", "--wait-master-timeout=60"]).on_pod_create(
        p, job("test-pytorch", ("master", 1), ("worker", 3)))
    env = {e["name"]: e["value"] for e in p["spec"]["containers"][0]["env"]}
    assert env == {"MASTER_ADDR": "test-pytorch-master-0.test-pytorch", "MASTER_PORT": "5000", "WORLD_SIZE": "4", "RANK": "3"}
    init = p["spec"]["initContainers"][0]
    assert init["name"] == "wait-for-master" and init["image"] == "busybox:1.36.1"
    assert "TIMEOUT=60" in init["command"][2] and "nc -z test-pytorch-master-0.test-pytorch 5000" in init["command"][2]


@pytest.mark.upstream(f"{PT}/pytorch/pytorch_test.go: test pod without master")
def test_pytorch_without_a_master_task_changes_nothing() -> None:
    p = pod("test-pytorch-worker-0", "worker")
    build("pytorch", []).on_pod_create(p, job("test-pytorch", ("worker", 1)))
    assert p["spec"]["containers"][0] == {"name": "c"}


@pytest.mark.upstream(f"{PT}/mpi/mpi_test.go: add port")
def test_mpi_master_gets_every_worker_host_and_all_pods_the_ssh_port() -> None:
    m = pod("mpi-master-0", "master")
    w = pod("mpi-worker-1", "worker")
    plugin = build("mpi", [])
    j = job("mpi", ("master", 1), ("worker", 3))
    plugin.on_pod_create(m, j)
    plugin.on_pod_create(w, j)
    assert m["spec"]["containers"][0]["env"] == [
        {"name": "MPI_HOST", "value": "mpi-worker-0.mpi,mpi-worker-1.mpi,mpi-worker-2.mpi"}]
    assert w["spec"]["containers"][0]["ports"] == [{"name": "mpijob-port", "containerPort": 22}]
    assert "env" not in w["spec"]["containers"][0]


@pytest.mark.upstream(f"{PT}/tensorflow/tensorflow_test.go: ps case, worker case, chief case")
@pytest.mark.parametrize(("name", "task", "kind"), [("train-123-ps-0", "ps", "ps"), ("train-123-worker-0", "worker", "worker"),
                                                     ("train-123-chief-0", "chief", "chief")])
def test_tensorflow_config_is_upstreams_json(name: str, task: str, kind: str) -> None:
    p = pod(name, task)
    build("tensorflow", ["--port=5000"]).on_pod_create(p, job("train-123", ("ps", 2), ("worker", 2), ("chief", 1)))
    raw = p["spec"]["containers"][0]["env"][0]
    assert raw["name"] == "TF_CONFIG"
    assert raw["value"] == ('{"cluster":{"ps":["train-123-ps-0.train-123:5000","train-123-ps-1.train-123:5000"],'
                            '"worker":["train-123-worker-0.train-123:5000","train-123-worker-1.train-123:5000"],'
                            '"chief":["train-123-chief-0.train-123:5000"]},"task":{"type":"' + kind + '","index":0}}')
    assert json.loads(raw["value"])["task"]["type"] == kind


def test_tensorflow_single_replica_job_gets_nothing() -> None:
    p = pod("one-worker-0", "worker")
    build("tensorflow", []).on_pod_create(p, job("one", ("worker", 1)))
    assert "env" not in p["spec"]["containers"][0]


def test_hcclrank_from_rank_env_else_from_task_index_after_the_masters() -> None:
    plugin = build("hcclrank", [])
    j = job("h", ("master", 2), ("worker", 4))
    a = pod("h-master-0", "master", env=[{"name": "RANK", "value": "7"}])
    plugin.on_pod_create(a, j)
    assert a["metadata"]["annotations"]["hccl/rankIndex"] == "7"
    b = pod("h-worker-1", "worker", labels={"volcano.sh/task-index": "1"})
    plugin.on_pod_create(b, j)
    assert b["metadata"]["annotations"]["hccl/rankIndex"] == "3"
    c = pod("h-master-1", "master", labels={"volcano.sh/task-index": "1"})
    c["metadata"]["annotations"]["hccl/rankIndex"] = "9"
    plugin.on_pod_create(c, j)
    assert c["metadata"]["annotations"]["hccl/rankIndex"] == "9"
