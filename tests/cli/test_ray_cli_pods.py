"""``pumice ray log`` and ``pumice ray session`` against the API server and a process-runtime node
agent: ``log`` reads each Ray Pod's container log and its ``/tmp/ray/session_latest/logs`` through
``pods/exec`` (tar in the Pod's own mount namespace), ``session`` runs the real ``kubectl
port-forward service/<head service>`` through the API server's tunnel to the node agent, and
``job submit`` hands ``ray job submit`` a local port that kubectl forwards the same way.

The Pods stand in for Ray nodes (labels, a Ray-shaped logs directory behind a ``session_latest``
symlink, HTTP servers on the dashboard and client ports): what is under test is the CLI and the
streaming path, not Ray, so no real Ray is started.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pumice.api import scheme
from pumice.cli.main import main as cli
from pumice.client.base import ApiError
from pumice.node.agent import NodeAgent
from pumice.testing.cluster import HttpServer, serve_http
from pumice.testing.kubectl import kubectl_binary
from pumice.testing.node import phase_is, pod, wait_for

pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root")]


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # not under /tmp: every Pod gets a private /tmp that would hide it
    d = Path(tempfile.mkdtemp(prefix="pumice-raycli-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
async def stack(data_dir: Path) -> AsyncIterator[HttpServer]:
    async with serve_http(data_dir / "api") as srv:
        agent = NodeAgent(srv.client(), runtime="process", data_dir=data_dir / "node", node_names=["node-0"],
                          node_cpu="4", node_memory="8Gi", lease_renew_interval=None, stop_grace=2.0)
        await agent.start()
        try:
            yield srv
        finally:
            await agent.stop()


def _ray_labels(cluster: str, node_type: str) -> dict[str, str]:
    return {"ray.io/cluster": cluster, "ray.io/node-type": node_type, "ray.io/is-ray-node": "yes",
            "ray.io/group": "headgroup" if node_type == "head" else "workers"}


async def _running(srv: HttpServer, *pods: dict[str, Any]) -> None:
    client = srv.client()
    try:
        for p in pods:
            await client.create(p)
        for p in pods:
            await wait_for(lambda name=p["metadata"]["name"]: phase_is(client, name, "Running"), timeout=60)
    finally:
        await client.close()


def _ray_node(name: str, cluster: str, node_type: str) -> dict[str, Any]:
    """A Pod with Ray's log layout: session_latest -> session_<ts>, files at two levels."""
    script = ("s=/tmp/ray/session_2026-12-01_17-00-00_000000_1; mkdir -p $s/logs/old && "
              "ln -s $s /tmp/ray/session_latest && "
              f"echo raylet-of-{name} > $s/logs/raylet.out && echo gcs > $s/logs/old/gcs_server.err && "
              f"echo started {name} && exec sleep 3600")
    return pod(name, script, labels=_ray_labels(cluster, node_type))


def _fetch_index(base: str) -> str | None:
    """GET ``base/index.html`` (retried for 10 s: the server in the Pod may still be starting)."""
    for _ in range(20):
        try:
            with urllib.request.urlopen(f"{base}/index.html", timeout=10) as resp:
                return str(resp.read().decode())
        except OSError:
            time.sleep(0.5)
    return None


async def _cli(srv: HttpServer, *args: str) -> Any:
    return await asyncio.to_thread(CliRunner().invoke, cli, ["ray", *args, "--kubeconfig", str(srv.kubeconfig)])


async def _has_logged(srv: HttpServer, name: str, text: str) -> bool:
    """Whether Pod ``name``'s log holds ``text`` yet (a Pod is Running once its process is
    spawned, before its script has written anything; the log endpoint refuses while the
    container's status is not written yet)."""
    client = srv.client()
    try:
        return text.encode() in b"".join([c async for c in client.logs("default", name)])
    except ApiError:
        return False
    finally:
        await client.close()


async def test_log_downloads_each_ray_nodes_logs_through_exec(stack: HttpServer, data_dir: Path) -> None:
    await _running(stack, _ray_node("lc-head", "lc", "head"), _ray_node("lc-worker", "lc", "worker"),
                   pod("bare-head", "sleep 3600", labels=_ray_labels("bare", "head")))
    for node in ("lc-head", "lc-worker"):
        await wait_for(lambda node=node: _has_logged(stack, node, f"started {node}"), timeout=60)
    out = data_dir / "logs"
    out.mkdir()
    r = await _cli(stack, "log", "lc", "--out-dir", str(out))
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == ["Command set to retrieve both head and worker node logs.",
                                     "Downloading log for Ray Node lc-head", "Downloading log for Ray Node lc-worker"]
    for node in ("lc-head", "lc-worker"):
        assert (out / node / "stdout.log").read_text() == f"started {node}\n"
        assert (out / node / "raylet.out").read_text() == f"raylet-of-{node}\n"
        assert (out / node / "old" / "gcs_server.err").read_text() == "gcs\n"
    heads = data_dir / "heads"
    heads.mkdir()
    r = await _cli(stack, "log", "lc", "--node-type", "head", "--out-dir", str(heads))
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in heads.iterdir()) == ["lc-head"]
    # a Ray Pod whose Ray never wrote logs: tar's failure, on one line
    r = await _cli(stack, "log", "bare", "--out-dir", str(heads))
    assert r.exit_code == 1
    assert r.output.splitlines()[-1].startswith("Error: Error occurred while calling remote command: command "
                                                "terminated with non-zero exit code")


async def test_session_forwards_the_dashboard_and_client_ports_of_the_head_service(
        stack: HttpServer, data_dir: Path) -> None:
    www = data_dir / "www"
    www.mkdir()
    (www / "index.html").write_text("ray head\n")
    serve = f"{sys.executable} -m http.server --bind 127.0.0.1 --directory {www}"
    await _running(stack, pod("sc-head", f"{serve} 8265 & {serve} 10001 & wait", labels=_ray_labels("sc", "head")))
    client = stack.client()
    try:
        await client.create({"apiVersion": "v1", "kind": "Service",
                             "metadata": {"name": "sc-head-svc", "namespace": "default"},
                             "spec": {"selector": {"ray.io/cluster": "sc", "ray.io/node-type": "head"},
                                      "ports": [{"name": "dashboard", "port": 8265},
                                                {"name": "client", "port": 10001}]}})
        cl = await client.create({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                                  "metadata": {"name": "sc", "namespace": "default"},
                                  "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
                                      "containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}}}})
        await client.update_status({**cl, "status": {"head": {"serviceName": "sc-head-svc"}}})
    finally:
        await client.close()
    address = f"127.{random.Random().randint(64, 250)}.{random.Random().randint(1, 250)}.7"
    env = {**os.environ, "PATH": f"{Path(kubectl_binary()).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def kubectl_children(pid: int) -> list[int]:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [int(k) for k in kids if "kubectl" in Path(f"/proc/{k}/cmdline").read_bytes().decode(errors="replace")]

    def forward_and_fetch() -> tuple[list[str], list[str], int]:
        proc = subprocess.Popen([sys.executable, "-c", "from pumice.cli.main import main; main()", "ray", "session",
                                 "sc", "--address", address, "--kubeconfig", str(stack.kubeconfig)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: list[str] = []
        bodies: list[str] = []

        def read_until_forwarding(count: int) -> None:
            assert proc.stdout is not None
            while len([x for x in lines if x.startswith("Forwarding from")]) < count:
                line = proc.stdout.readline()
                if not line:
                    break
                lines.append(line.rstrip("\n"))

        def fetch(port: int) -> None:
            body = _fetch_index(f"http://{address}:{port}")
            if body is not None:
                bodies.append(body)

        try:
            read_until_forwarding(2)
            fetch(8265)
            fetch(10001)
            # the port-forward dies: session says so and starts it again
            for kid in kubectl_children(proc.pid):
                os.kill(kid, signal.SIGKILL)
            read_until_forwarding(4)
            fetch(8265)
        finally:
            proc.send_signal(signal.SIGTERM)
            rest, _ = proc.communicate(timeout=20)
            lines += rest.splitlines()
        return lines, bodies, proc.returncode

    lines, bodies, code = await asyncio.to_thread(forward_and_fetch)
    assert lines[:4] == ["Forwarding ports to service sc-head-svc", f"Ray Dashboard: http://{address}:8265",
                         f"Ray Interactive Client: http://{address}:10001", ""], lines
    assert f"Forwarding from {address}:8265 -> 8265" in lines and f"Forwarding from {address}:10001 -> 10001" in lines
    assert "failed to port-forward: signal: killed. Retrying in 3s ..." in lines, lines
    assert bodies == ["ray head\n"] * 3, lines
    assert code == 0, lines


async def _ready_head(stack: HttpServer, www: Path) -> None:
    """A head Pod serving ``www`` on the dashboard port, its Service, and RayCluster ``jc``
    marked ready (the test stands in for the operator)."""
    serve = f"{sys.executable} -m http.server --bind 127.0.0.1 --directory {www} 8265"
    await _running(stack, pod("jc-head", serve, labels=_ray_labels("jc", "head")))
    client = stack.client()
    try:
        await client.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "jc-head-svc", "namespace": "default"},
                             "spec": {"selector": {"ray.io/cluster": "jc", "ray.io/node-type": "head"},
                                      "ports": [{"name": "dashboard", "port": 8265}]}})
        cl = await client.create({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                                  "metadata": {"name": "jc", "namespace": "default"},
                                  "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
                                      "containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}}}})
        await client.update_status({**cl, "status": {"state": "ready", "head": {"serviceName": "jc-head-svc"}}})
    finally:
        await client.close()


async def _submit(stack: HttpServer, name: str, submission_id: str) -> Any:
    """``pumice ray job submit --name NAME`` while playing the operator: the RayJob gets
    ``status.rayClusterName: jc``."""
    async def play_operator() -> None:
        c = stack.client()
        try:
            async def rayjob() -> Any:
                try:
                    return await c.get(scheme.RAY_JOB, name, "default")
                except Exception:
                    return None
            await wait_for(rayjob, timeout=60)
            job = await rayjob()
            await c.update_status({**job, "status": {"rayClusterName": "jc"}})
        finally:
            await c.close()

    operator = asyncio.create_task(play_operator())
    r = await asyncio.to_thread(CliRunner().invoke, cli, [
        "ray", "job", "submit", "--name", name, "--submission-id", submission_id, "--timeout", "60",
        "--kubeconfig", str(stack.kubeconfig), "--", "python", "-c", "pass"])
    await operator
    return r


async def test_job_submit_reaches_the_dashboard_through_a_kubectl_port_forward(
        stack: HttpServer, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``--address``: ``ray job submit`` gets ``http://127.0.0.1:<port>``, a ``kubectl
    port-forward`` to the head Service's port 8265 through the API server (the test stands in for
    the operator: it points the RayJob at a ready RayCluster); the tunnel ends with the submit."""
    import pumice.cli.ray as ray_cli

    www = data_dir / "www"
    www.mkdir()
    (www / "index.html").write_text("ray dashboard\n")
    await _ready_head(stack, www)

    seen: list[list[str]] = []
    bodies: list[str] = []

    def fake_ray_submit(argv: list[str]) -> None:  # runs where `ray job submit` would
        seen.append(argv)
        body = _fetch_index(argv[argv.index("--address") + 1])
        if body is not None:
            bodies.append(body)

    monkeypatch.setattr(ray_cli, "run_ray_submit", fake_ray_submit)
    monkeypatch.setenv("PATH", f"{Path(kubectl_binary()).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    r = await _submit(stack, "pf-job", "sub-1")
    assert r.exit_code == 0, r.output
    assert len(seen) == 1, r.output
    argv = seen[0]
    address = argv[argv.index("--address") + 1]
    assert address.startswith("http://127.0.0.1:") and address != "http://127.0.0.1:8265"
    assert argv[argv.index("--submission-id") + 1] == "sub-1" and argv[-4:] == ["--", "python", "-c", "pass"]
    assert bodies == ["ray dashboard\n"]
    # the port-forward is gone with the submit
    kids = [k for task in Path("/proc/self/task").iterdir() for k in (task / "children").read_text().split()]
    assert not [k for k in kids if "kubectl" in Path(f"/proc/{k}/cmdline").read_bytes().decode(errors="replace")]


async def test_a_failed_job_is_reported_with_its_status_message_not_stderr_s_last_line(
        stack: HttpServer, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trial 6 F-11: ``ray job submit`` of a job whose entrypoint exits 3 exits 1, and its stderr's
    last line is Ray's INFO log of the log stream closing. The one-line error says the job FAILED
    and its status message, read from the dashboard (``GET /api/jobs/<id>``, served here as a
    file by the head Pod's HTTP server) through the same port-forward; a job the dashboard does
    not know keeps stderr's last line."""
    import json

    import pumice.cli.ray as ray_cli

    www = data_dir / "www"
    (www / "api" / "jobs").mkdir(parents=True)
    (www / "api" / "jobs" / "sub-f").write_text(json.dumps({
        "status": "FAILED", "submission_id": "sub-f", "entrypoint": "python -c pass",
        "message": "Job entrypoint command failed with exit code 3, last available logs (truncated to 20,000 chars):\n"
                   "hello\nbye\n"}))
    await _ready_head(stack, www)
    websocket = ("2026-12-02 00:27:00,224 INFO sdk.py:520 -- WebSocket closed for job sub-f with close code 1000")
    real = ray_cli.run_ray_submit

    def stand_in(argv: list[str]) -> None:  # `ray job submit` of a job that failed
        real([sys.executable, "-c", f"import sys; sys.stderr.write({websocket!r} + '\\n'); sys.exit(1)"])

    monkeypatch.setattr(ray_cli, "run_ray_submit", stand_in)
    monkeypatch.setenv("PATH", f"{Path(kubectl_binary()).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    r = await _submit(stack, "jfail", "sub-f")
    assert r.exit_code == 1, r.output
    assert r.output.splitlines()[-1] == ("Error: ray job sub-f FAILED: Job entrypoint command failed with exit code 3, "
                                         "last available logs (truncated to 20,000 chars): ... bye"), r.output
    # the dashboard has no job sub-g (404): ray job submit failed before submitting it
    r = await _submit(stack, "jfail2", "sub-g")
    assert r.exit_code == 1, r.output
    assert r.output.splitlines()[-1] == f"Error: ray job submit exited with 1: {websocket}", r.output
