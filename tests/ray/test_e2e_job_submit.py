"""``pumice ray job submit`` on real Ray (``pumice up``, process runtime, as a subprocess): the
CLI creates an InteractiveMode RayJob, waits for its cluster, and runs the real ``ray job submit``
against ``kubectl port-forward service/<head service> :8265`` through the API server (no
``--address``, no Pod IP dialled from the host); the job's output comes back through the tunnel
and the RayJob follows the job to SUCCEEDED. A job whose entrypoint fails is one error line that
says it FAILED and why (the Ray job's status message), not Ray's log of its log stream closing.

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
from collections.abc import Iterator
from pathlib import Path

import pytest

from pumice.api import Obj, scheme
from pumice.client.kubeconfig import connect
from pumice.testing.up import Up, start_up, stop_up

pytestmark = [
    pytest.mark.ray,
    pytest.mark.kubectl,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not (Path(sys.executable).parent / "ray").exists(), reason="ray is not installed"),
]

RAY_VERSION = "2.60.0"  # the venv's Ray


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    data = Path(tempfile.mkdtemp(prefix="pumice-submit-e2e-", dir="/var/tmp"))
    proc, u = start_up(data, "--batch-scheduler", "none", "--node-cpu", "4", "--node-memory", "8Gi")
    try:
        yield u
    finally:
        stop_up(proc, timeout=120)
        print((data / "up.log").read_text()[-3000:], flush=True)
        shutil.rmtree(data, ignore_errors=True)


def submit(up: Up, name: str, submission_id: str, entry: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([
        sys.executable, "-m", "pumice.cli.main", "ray", "job", "submit", "--name", name, "--ray-version",
        RAY_VERSION, "--head-cpu", "1", "--head-memory", "2Gi", "--worker-replicas", "0", "--timeout", "300",
        "--submission-id", submission_id, "--kubeconfig", str(up.kubeconfig), "--", "python", "-c", entry],
        capture_output=True, text=True, timeout=600, env=os.environ.copy())


async def test_job_submit_runs_a_job_through_the_api_servers_port_forward(up: Up) -> None:
    client = connect(up.kubeconfig)
    try:
        entry = "import ray; ray.init(); print('through the tunnel:', int(ray.cluster_resources()['CPU']), 'CPU')"
        res = await asyncio.to_thread(submit, up, "tunnel", "tunnel-1", entry)
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


def test_a_failing_job_is_one_line_saying_it_failed_and_why(up: Up) -> None:
    """Trial 6 F-11: the error line was stderr's last line, Ray's "WebSocket closed ... code 1000"."""
    res = submit(up, "jfail", "jfail-1", "import sys; print('bye', file=sys.stderr); sys.exit(3)")
    assert res.returncode == 1, res.stdout + res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: ray job jfail-1 FAILED: Job entrypoint command failed with exit code 3"), res.stderr
    assert last.endswith(" ... bye"), res.stderr
    assert "WebSocket" not in last
