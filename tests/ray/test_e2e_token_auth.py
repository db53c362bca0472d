"""A RayJob on a token-auth RayCluster on real Ray (issue 10): ``pumice up`` as a subprocess, a
RayJob with ``authOptions.mode: token``. The RayCluster controller makes the auth
Secret and starts Ray with ``RAY_AUTH_MODE=token``; the RayJob controller reads the Secret and
sends ``x-ray-authorization`` to submit (HTTPMode) and poll the job; in K8sJobMode the submitter
Pod's ``ray job submit`` authenticates with the ``RAY_AUTH_TOKEN`` the controller gives it. Both
reach SUCCEEDED. The head's
dashboard itself refuses a request without the token (so the success is the token's doing).

Real Ray (~25-35 s per case on an idle machine): marked ``ray``; run it under the realray lock.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from pumice.api import Obj, scheme
from pumice.client.kubeconfig import connect
from pumice.testing.ray_logs import diagnosis
from pumice.testing.up import Up, start_up, stop_up

from .conftest import QUICK_READINESS

pytestmark = [
    pytest.mark.ray,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not (Path(sys.executable).parent / "ray").exists(), reason="ray is not installed"),
]

NAME = "rayjob-token"
RAY_VERSION = "2.60.0"  # the venv's Ray; token auth needs >= 2.52.0


@pytest.fixture(scope="module")
def up() -> Iterator[tuple[Up, Path]]:
    """One ``pumice up`` (process runtime) for both submission modes: each case runs its own RayJob
    and RayCluster in it, so a second stack start and stop bought nothing. Yields it and its data
    dir."""
    data = Path(tempfile.mkdtemp(prefix="pumice-token-e2e-", dir="/var/tmp"))
    proc, u = start_up(data, "--batch-scheduler", "none", "--node-cpu", "4", "--node-memory", "8Gi")
    try:
        yield u, data
    finally:
        stop_up(proc, timeout=120)
        print((data / "up.log").read_text()[-3000:], flush=True)
        shutil.rmtree(data, ignore_errors=True)


def rayjob(name: str, mode: str) -> Obj:
    head = {"name": "ray-head", "image": f"rayproject/ray:{RAY_VERSION}",
            "ports": [{"containerPort": 6379, "name": "gcs-server"}, {"containerPort": 8265, "name": "dashboard"},
                      {"containerPort": 10001, "name": "client"}],
            "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}},
            "readinessProbe": QUICK_READINESS}
    return {
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "entrypoint": "python -c \"import ray; ray.init(); print('token job sees', ray.cluster_resources()['CPU'], 'CPU')\"",
            "submissionMode": mode, "shutdownAfterJobFinishes": False,
            "rayClusterSpec": {
                "rayVersion": RAY_VERSION, "authOptions": {"mode": "token"},
                "headGroupSpec": {"rayStartParams": {"num-cpus": "1"}, "template": {"spec": {"containers": [head]}}},
            },
        },
    }


@pytest.mark.parametrize("mode", ["HTTPMode", "K8sJobMode"])
async def test_rayjob_on_a_token_auth_cluster_succeeds(up: tuple[Up, Path], mode: str) -> None:
    u, data = up
    name = f"{NAME}-{mode.lower()}"
    client = connect(u.kubeconfig)
    try:
        await client.create(rayjob(name, mode))
        deadline = time.monotonic() + 300  # 25-35 s on an idle machine
        st: Obj = {}
        while True:
            st = (await client.get(scheme.RAY_JOB, name, "default")).get("status") or {}
            if st.get("jobDeploymentStatus") in ("Complete", "Failed"):
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"RayJob {name} did not end within 300 s\n"
                                     f"{await diagnosis(client, data / 'node' / 'pods')}")
            await asyncio.sleep(2)
        assert (st.get("jobStatus"), st.get("jobDeploymentStatus")) == ("SUCCEEDED", "Complete"), (
            f"{st}\n{await diagnosis(client, data / 'node' / 'pods')}")
        cluster = await client.get(scheme.RAY_CLUSTER, st["rayClusterName"], "default")
        assert cluster["spec"]["authOptions"] == {"mode": "token"}
        secret = await client.get(scheme.SECRET, st["rayClusterName"], "default")
        token = base64.b64decode(secret["data"]["auth_token"]).decode()
        base = f"http://{cluster['status']['head']['podIP']}:8265"
        async with httpx2.AsyncClient(timeout=10) as http:
            refused = await http.get(f"{base}/api/jobs/{st['jobId']}")
            allowed = await http.get(f"{base}/api/jobs/{st['jobId']}",
                                     headers={"x-ray-authorization": f"Bearer {token}"})
            logs = await http.get(f"{base}/api/jobs/{st['jobId']}/logs",
                                  headers={"x-ray-authorization": f"Bearer {token}"})
        assert refused.status_code == 401, refused.text
        assert allowed.status_code == 200 and allowed.json()["status"] == "SUCCEEDED", allowed.text
        assert "token job sees 1.0 CPU" in logs.json()["logs"], logs.text
        # the next case shares the stack: this one's Ray cluster goes (the deletion cascades)
        await client.delete(scheme.RAY_JOB, name, "default")
    finally:
        await client.close()
