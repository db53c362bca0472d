"""``pumice ray job submit`` on real Ray (``pumice up``, process runtime, as a subprocess): the
CLI creates an InteractiveMode RayJob, waits for its cluster, and runs the real ``ray job submit``
against ``kubectl port-forward service/<head service> :8265`` through the API server (no
``--address``, no Pod IP dialled from the host); the job's output comes back through the tunnel
and the RayJob follows the job to SUCCEEDED.

Real Ray (~30-60 s on an idle machine): marked ``ray``; run it under the realray lock.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pumice.api import Obj, scheme
from pumice.client.kubeconfig import connect
from pumice.testing.up import start_up, stop_up

pytestmark = [
    pytest.mark.ray,
    pytest.mark.kubectl,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not (Path(sys.executable).parent / "ray").exists(), reason="ray is not installed"),
]

RAY_VERSION = "2.60.0"  # the venv's Ray


async def test_job_submit_runs_a_job_through_the_api_servers_port_forward() -> None:
    data = Path(tempfile.mkdtemp(prefix="pumice-submit-e2e-", dir="/var/tmp"))
    proc, up = start_up(data, "--batch-scheduler", "none", "--node-cpu", "4", "--node-memory", "8Gi")
    client = connect(up.kubeconfig)
    try:
        entry = "import ray; ray.init(); print('through the tunnel:', int(ray.cluster_resources()['CPU']), 'CPU')"
        res = await asyncio.to_thread(subprocess.run, [
            sys.executable, "-m", "pumice.cli.main", "ray", "job", "submit", "--name", "tunnel", "--ray-version",
            RAY_VERSION, "--head-cpu", "1", "--head-memory", "2Gi", "--worker-replicas", "0", "--timeout", "300",
            "--submission-id", "tunnel-1", "--kubeconfig", str(up.kubeconfig), "--", "python", "-c", entry],
            capture_output=True, text=True, timeout=600, env=os.environ.copy())
        assert res.returncode == 0, res.stdout + res.stderr
        assert "Submitted RayJob tunnel." in res.stdout
        assert "through the tunnel: 1 CPU" in res.stdout, res.stdout
        assert "Job 'tunnel-1' succeeded" in res.stdout, res.stdout
        # ray job submit dialled kubectl's local port, not the head Pod IP
        address = next(ln for ln in res.stdout.splitlines() if "Job submission server address" in ln)
        assert "http://127.0.0.1:" in address, address
        deadline = time.monotonic() + 120
        st: Obj = {}
        while time.monotonic() < deadline:
            st = (await client.get(scheme.RAY_JOB, "tunnel", "default")).get("status") or {}
            if st.get("jobStatus") == "SUCCEEDED":
                break
            await asyncio.sleep(2)
        assert (st.get("jobId"), st.get("jobStatus")) == ("tunnel-1", "SUCCEEDED"), st
    finally:
        await client.close()
        stop_up(proc, timeout=120)
        print((data / "up.log").read_text()[-3000:], flush=True)
        shutil.rmtree(data, ignore_errors=True)
