"""``pumice ray`` (the kubectl-ray verbs) against a real HTTPS API server through a kubeconfig."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pumice.cli.main import main as cli
from pumice.cli.ray import RayCliError, build_cluster, parse_resource, relevant_condition, scale_group, table
from pumice.testing.cluster import serve_http


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with serve_http(tmp_path_factory.mktemp("raycli")) as srv:
        yield srv


def run(server: Any, *args: str, input: str | None = None) -> Any:
    return CliRunner().invoke(cli, ["ray", *args, "--kubeconfig", str(server.kubeconfig)], input=input)


def test_create_get_scale_delete_round_trip(server: Any) -> None:
    r = run(server, "create", "cluster", "demo", "--worker-replicas", "2")
    assert r.exit_code == 0, r.output
    assert r.output.strip() == "Created Ray cluster: demo"
    r = run(server, "get", "cluster", "demo")
    assert r.exit_code == 0, r.output
    header, row = r.output.strip().splitlines()
    assert header.split("   ")[0].strip() == "NAME" and "DESIRED WORKERS" in header and "CONDITION" in header
    assert row.startswith("demo ")
    r = run(server, "get", "workergroup", "-c", "demo")
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[0].split() == ["NAME", "MIN", "MAX", "REPLICAS", "CPUS", "GPUS", "TPUS", "MEMORY", "CLUSTER"]
    assert lines[1].split() == ["default-group", "2", "2", "0/2", "2", "0", "0", "4Gi", "demo"]
    r = run(server, "scale", "cluster", "demo", "-w", "default-group", "--max-replicas", "5", "-r", "3")
    assert r.exit_code == 0, r.output
    assert r.output.strip() == ("Updated worker group default-group in Ray cluster demo in namespace default "
                                "(Scaled maxReplicas: 2 to 5, Scaled Replicas: 2 to 3)")
    r = run(server, "scale", "cluster", "demo", "-w", "default-group", "-r", "3")
    assert "already matches the requested configuration. Skipping." in r.output
    r = run(server, "scale", "cluster", "demo", "-w", "nope", "-r", "3")
    assert r.exit_code == 1 and r.output.strip() == ("Error: worker group nope not found in Ray cluster demo in "
                                                     "namespace default. Available worker groups: default-group")
    r = run(server, "delete", "demo", input="n\n")
    assert "Canceled deletion." in r.output
    r = run(server, "delete", "raycluster/demo", "-y")
    assert r.exit_code == 0 and r.output.strip() == "Deleted raycluster demo"
    r = run(server, "get", "cluster", "demo")
    assert r.exit_code == 1 and r.output.strip() == "Error: Ray cluster demo not found in namespace default"


def test_create_dry_run_prints_the_plugin_defaults() -> None:
    r = CliRunner().invoke(cli, ["ray", "create", "cluster", "x", "--dry-run", "--autoscaler", "v2"])
    assert r.exit_code == 0, r.output
    cl = yaml.safe_load(r.output)
    head = cl["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["image"] == "rayproject/ray:2.52.0"
    assert head["resources"]["requests"] == {"cpu": "2", "memory": "4Gi"}
    assert [p["name"] for p in head["ports"]] == ["gcs-server", "dashboard", "client"]
    assert cl["spec"]["workerGroupSpecs"][0]["groupName"] == "default-group"
    assert cl["spec"]["enableInTreeAutoscaling"] is True and cl["spec"]["autoscalerOptions"] == {"version": "v2"}


def test_scale_validates_the_final_bounds() -> None:
    cl = build_cluster("c", "default", ray_version="2.52.0", image="i", head_cpu="1", head_memory="1Gi", head_gpu="0",
                       worker_replicas=2, worker_cpu="1", worker_memory="1Gi", worker_gpu="0", labels={},
                       annotations={}, autoscaler=None)
    with pytest.raises(RayCliError, match=r"cannot set --replicas \(3\) greater than --max-replicas \(2\)"):
        scale_group(copy.deepcopy(cl), "default-group", 3, None, None)
    with pytest.raises(RayCliError, match=r"cannot set --min-replicas \(3\) greater than --max-replicas \(2\)"):
        scale_group(copy.deepcopy(cl), "default-group", None, 3, None)
    assert scale_group(cl, "default-group", 0, 0, None) == "Scaled minReplicas: 2 to 0, Scaled Replicas: 2 to 0"


def test_relevant_condition_follows_the_plugins_precedence() -> None:
    conds = [{"type": "HeadPodReady", "status": "True"}, {"type": "RayClusterProvisioned", "status": "True"}]
    assert relevant_condition({"status": {"conditions": conds}}) == "RayClusterProvisioned"
    conds[1]["status"] = "False"
    assert relevant_condition({"status": {"conditions": conds}}) == "HeadPodReady"
    assert relevant_condition({}) == ""


def test_resources_and_table() -> None:
    assert parse_resource("x") == ("raycluster", "x")
    assert parse_resource("RayService/s") == ("rayservice", "s")
    with pytest.raises(RayCliError):
        parse_resource("pod/x")
    assert table(["a", "bb"], [["long", 1]]) == "A      BB\nlong   1"


def test_unknown_flag_is_one_line(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["ray", "scale", "cluster", "c", "-w", "g"])
    assert r.exit_code == 2 and "must specify at least one of --replicas" in r.output
