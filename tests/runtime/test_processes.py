"""Separate processes wired only by a kubeconfig: an API server process and two
``pumice controller-manager`` processes. Only one holds the Lease; when it is killed (SIGKILL, no
release) the other takes over; SIGTERM stops a manager gracefully (exit 0, Lease released).

The API server process is ``pumice apiserver`` when that command exists, else the same server
started through ``pumice.testing.cluster.serve_http`` in a child Python process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pumice.testing.cluster", reason="the API server has not landed")

REPO = Path(__file__).resolve().parents[2]
PUMICE = [sys.executable, "-m", "pumice.cli.main"]
SERVE_SCRIPT = """
import signal, sys, threading
from pumice.testing.cluster import serve_http
srv = serve_http(sys.argv[1]).start()
print(srv.url, flush=True)
done = threading.Event()
signal.signal(signal.SIGTERM, lambda *a: done.set())
done.wait()
srv.stop()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    return e


@contextlib.contextmanager
def process(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "wb") as out:
        p = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env(), cwd=REPO)
    try:
        yield p
    finally:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)


def apiserver_args(data_dir: Path) -> list[str]:
    if (REPO / "pumice" / "cli" / "apiserver.py").exists():
        return [*PUMICE, "apiserver", "--data-dir", str(data_dir), "--port", str(free_port())]
    return [sys.executable, "-c", SERVE_SCRIPT, str(data_dir)]


def lease_holder(kubeconfig: Path) -> str | None:
    """holderIdentity of kube-system/pumice-controller-manager via kubectl-free HTTP."""
    import asyncio

    from pumice.client.kubeconfig import connect
    from pumice.runtime.leaderelection import LEASE

    async def get() -> str | None:
        client = connect(kubeconfig)
        try:
            lease = await client.get(LEASE, "pumice-controller-manager", "kube-system")
            return str(lease["spec"].get("holderIdentity") or "")
        except Exception:
            return None
        finally:
            await client.close()

    return asyncio.run(get())


def http_get(port: int, path: str) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def test_two_controller_manager_processes_elect_one_leader_and_fail_over(tmp_path: Path) -> None:
    data = tmp_path / "api"
    data.mkdir()
    kubeconfig = data / "kubeconfig"
    with process(apiserver_args(data), tmp_path / "apiserver.log") as api:
        wait_until(lambda: kubeconfig.exists() or api.poll() is not None, 60, "the API server's kubeconfig")
        assert api.poll() is None, (tmp_path / "apiserver.log").read_text()
        wait_until(lambda: lease_holder(kubeconfig) is not None or _ready(kubeconfig), 60, "the API server")

        ports = {"cm-a": free_port(), "cm-b": free_port()}

        def manager(identity: str) -> list[str]:
            return [*PUMICE, "controller-manager", "--kubeconfig", str(kubeconfig), "--controllers", "kube",
                    "--leader-elect", "--identity", identity, "--health-port", str(ports[identity]),
                    "--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.5"]

        with process(manager("cm-a"), tmp_path / "cm-a.log") as a, \
                process(manager("cm-b"), tmp_path / "cm-b.log") as b:
            procs = {"cm-a": a, "cm-b": b}
            leader = wait_until(lambda: lease_holder(kubeconfig) or any(p.poll() is not None for p in procs.values()),
                                60, "a leader")
            assert all(p.poll() is None for p in procs.values()), _logs(tmp_path)
            standby = "cm-b" if leader == "cm-a" else "cm-a"
            wait_until(lambda: http_get(ports[standby], "/readyz")[0] == 200, 60, "the standby to be ready")
            assert http_get(ports[leader], "/healthz") == (200, "ok")
            time.sleep(2)
            assert lease_holder(kubeconfig) == leader, "the standby does not take a renewed Lease"

            procs[leader].send_signal(signal.SIGKILL)  # dies without releasing the Lease
            procs[leader].wait(10)
            wait_until(lambda: lease_holder(kubeconfig) == standby, 30, "the standby to take over")

            procs[standby].send_signal(signal.SIGTERM)
            assert procs[standby].wait(30) == 0, _logs(tmp_path)
            assert lease_holder(kubeconfig) == "", "a graceful stop releases the Lease"


def _logs(tmp_path: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(tmp_path.glob("*.log")))


def _ready(kubeconfig: Path) -> bool:
    import asyncio

    from pumice.client.kubeconfig import connect
    from pumice.runtime.leaderelection import LEASE

    async def probe() -> bool:
        client = connect(kubeconfig)
        try:
            await client.list(LEASE, "kube-system")
            return True
        except Exception:
            return False
        finally:
            await client.close()

    return asyncio.run(probe())


def test_a_controller_manager_process_reconciles_through_the_kubeconfig_only(tmp_path: Path) -> None:
    """The kube controllers in their own process create the Pods of a ReplicaSet made by a client in
    the test process: the two are connected only by the API server named in the kubeconfig."""
    import asyncio

    from pumice.client.kubeconfig import connect

    data = tmp_path / "api"
    data.mkdir()
    kubeconfig = data / "kubeconfig"
    rs = {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }

    async def create_rs() -> str:
        client = connect(kubeconfig)
        try:
            created = await client.create(rs)
            return str(created["metadata"]["uid"])
        finally:
            await client.close()

    def owned_pods(uid: str) -> int:
        async def count() -> int:
            client = connect(kubeconfig)
            try:
                pods = client.scheme.by_api_version_kind("v1", "Pod")
                assert pods is not None
                items = (await client.list(pods, "default")).items
                return sum(1 for p in items
                           if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or []))
            finally:
                await client.close()

        return asyncio.run(count())

    with process(apiserver_args(data), tmp_path / "apiserver.log") as api:
        wait_until(lambda: kubeconfig.exists() or api.poll() is not None, 60, "the API server's kubeconfig")
        wait_until(lambda: _ready(kubeconfig), 60, "the API server")
        uid = asyncio.run(create_rs())
        args = [*PUMICE, "controller-manager", "--kubeconfig", str(kubeconfig), "--controllers", "kube",
                "--no-leader-elect"]
        with process(args, tmp_path / "cm.log") as cm:
            wait_until(lambda: owned_pods(uid) == 2 or cm.poll() is not None, 60, "the ReplicaSet's Pods")
            assert cm.poll() is None, _logs(tmp_path)
            cm.send_signal(signal.SIGTERM)
            assert cm.wait(30) == 0, _logs(tmp_path)
