"""``pumice ray`` against ``pumice up --runtime simulated`` (a subprocess, as a user runs it): the
verbs that need no process in a Pod succeed, and ``log`` / ``session`` say in one line why a
simulated Pod has nothing to read or forward. The process-runtime side of ``log`` and ``session``
is tests/cli/test_ray_cli_pods.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from pumice.testing.up import start_up, stop_up


def ray(kubeconfig: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pumice.cli.main", "ray", *args, "--kubeconfig", str(kubeconfig)],
                          capture_output=True, text=True, timeout=timeout, env=os.environ.copy())


TOKEN_CLUSTER = """apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: tok, namespace: default}
spec:
  rayVersion: "2.52.0"
  authOptions: {mode: token}
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers: [{name: ray-head, image: rayproject/ray:2.52.0, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


def test_the_verbs_against_pumice_up_simulated(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    proc, up = start_up(data, "--runtime", "simulated", "--nodes", "1", "--node-cpu", "16", "--node-memory", "64Gi",
                        "--batch-scheduler", "none", "--durability", "relaxed")
    try:
        k = up.kubeconfig
        r = ray(k, "create", "cluster", "demo", "--head-cpu", "1", "--head-memory", "1Gi", "--worker-cpu", "1",
                "--worker-memory", "1Gi", "--wait", "--timeout", "90s")
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines() == ["Created Ray cluster: demo", "Ray cluster demo is provisioned"]
        # the README's next step (trial 3 finding 8): no --max-replicas needed, the CRD's default bound is MaxInt32
        r = ray(k, "scale", "cluster", "demo", "-w", "default-group", "-r", "2")
        assert r.returncode == 0 and "(Scaled Replicas: 1 to 2)" in r.stdout, r.stderr
        r = ray(k, "create", "workergroup", "extra", "-c", "demo", "--worker-cpu", "1", "--worker-memory", "1Gi")
        assert (r.returncode, r.stdout.strip()) == (0, "Updated Ray cluster default/demo with new worker group")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the controller creates the new group's Pod
            rows = ray(k, "get", "workergroup", "-c", "demo").stdout.splitlines()[1:]
            if [r.split()[:4] for r in rows] == [["default-group", "0", "2147483647", "2/2"], ["extra", "1", "10", "1/1"]]:
                break
            time.sleep(1)
        assert [r.split()[:4] for r in rows] == [["default-group", "0", "2147483647", "2/2"], ["extra", "1", "10", "1/1"]], rows
        # a token-auth cluster: the controller makes Secret "tok" and get token prints it
        up.kubectl("apply", "-f", "-", input=TOKEN_CLUSTER)
        deadline = time.monotonic() + 60
        while (r := ray(k, "get", "token", "tok")).returncode != 0 and time.monotonic() < deadline:
            time.sleep(1)
        assert r.returncode == 0 and len(r.stdout) == 44 and "\n" not in r.stdout, r.stderr
        r = ray(k, "get", "token", "demo")
        assert (r.returncode, r.stderr.strip()) == (
            1, "Error: RayCluster default/demo was not configured to use authentication tokens")
        r = ray(k, "version")
        assert r.returncode == 0 and r.stdout.splitlines()[0] == "kubectl ray plugin version: pumice 0.1.0"
        r = ray(k, "log", "demo", "--out-dir", str(tmp_path), "--node-type", "head")
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
        assert "runs the simulated runtime" in r.stderr and "Traceback" not in r.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]  # no empty <pod>/ left behind
        # job submit: refused before anything is made (the Pod IPs are not on this host)
        r = ray(k, "job", "submit", "--name", "job1", "--kubeconfig", str(k), "--", "python", "-c", "pass")
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "the Nodes run the simulated runtime" in r.stderr and "Traceback" not in r.stderr
        assert "job1" not in up.kubectl("get", "rayjobs", "-o", "name")
        # with --address, a cluster that never gets ready still times out with the reason, and the
        # RayJob goes (it used to submit anyway and leave a RayJob that could never run)
        r = ray(k, "job", "submit", "--name", "job2", "--address", "http://127.0.0.1:1", "--head-cpu", "100",
                "--timeout", "2", "--kubeconfig", str(k), "--", "python", "-c", "pass")
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "timed out after 2s waiting for the RayCluster of RayJob job2" in r.stderr, r.stderr
        assert r.stderr.strip().endswith("deleted the RayJob"), r.stderr
        assert "job2" not in up.kubectl("get", "rayjobs", "-o", "name")
        r = ray(k, "delete", "demo", "raycluster/tok", "-y")
        assert (r.returncode, r.stdout.splitlines()) == (0, ["Deleted raycluster demo", "Deleted raycluster tok"])
    finally:
        stop_up(proc)
