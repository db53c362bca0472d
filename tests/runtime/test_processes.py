"""Separate processes wired only by a kubeconfig: an API server process and two
``pumice controller-manager`` processes running the kube controllers. Only the Lease holder
reconciles; when it is killed (SIGKILL, no release) the other takes over and reconciles; SIGTERM
stops a manager gracefully (exit 0, Lease released).

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
        time.sleep(0.25)
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
    """holderIdentity of the Lease kube-system/pumice-controller-manager (None: no Lease yet)."""
    from pumice.api.scheme import LEASE

    async def get(client: Any) -> str | None:
        try:
            lease = await client.get(LEASE, "pumice-controller-manager", "kube-system")
            return str(lease["spec"].get("holderIdentity") or "")
        except Exception:
            return None

    return run(get, kubeconfig)  # type: ignore[no-any-return]


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


REPLICASET = {
    "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
}


def run(coro_fn: Callable[[Any], Any], kubeconfig: Path) -> Any:
    """Run ``await coro_fn(client)`` with a fresh client from the kubeconfig."""
    import asyncio

    from pumice.client.kubeconfig import connect

    async def main() -> Any:
        client = connect(kubeconfig)
        try:
            return await coro_fn(client)
        finally:
            await client.close()

    return asyncio.run(main())


def owned_pods(kubeconfig: Path, uid: str) -> int:
    async def count(client: Any) -> int:
        pods = client.scheme.by_api_version_kind("v1", "Pod")
        items = (await client.list(pods, "default")).items
        return sum(1 for p in items
                   if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or []))

    return int(run(count, kubeconfig))


def scale(kubeconfig: Path, replicas: int) -> None:
    async def patch(client: Any) -> None:
        rs = client.scheme.by_api_version_kind("apps/v1", "ReplicaSet")
        await client.patch(rs, "web", {"spec": {"replicas": replicas}}, "default")

    run(patch, kubeconfig)


def test_apiserver_and_two_controller_managers_as_processes_elect_reconcile_and_fail_over(
    tmp_path: Path,
) -> None:
    """Three processes wired only by the kubeconfig: the leader's kube controllers create the
    ReplicaSet's Pods; killed with SIGKILL (no release), the standby takes the Lease and reconciles
    the next change; SIGTERM then stops it with exit 0 and releases the Lease."""
    data = tmp_path / "api"
    data.mkdir()
    kubeconfig = data / "kubeconfig"
    with process(apiserver_args(data), tmp_path / "apiserver.log") as api:
        wait_until(lambda: kubeconfig.exists() or api.poll() is not None, 60, "the API server's kubeconfig")
        assert api.poll() is None, _logs(tmp_path)
        wait_until(lambda: _ready(kubeconfig), 60, "the API server")
        uid = run(lambda c: c.create(REPLICASET), kubeconfig)["metadata"]["uid"]

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
            wait_until(lambda: owned_pods(kubeconfig, uid) == 2, 60, "the leader to create the Pods")
            wait_until(lambda: http_get(ports[standby], "/readyz")[0] == 200, 60, "the standby to be ready")
            assert http_get(ports[leader], "/healthz") == (200, "ok")
            time.sleep(1.5)
            assert lease_holder(kubeconfig) == leader, "the standby does not take a renewed Lease"

            procs[leader].send_signal(signal.SIGKILL)  # dies without releasing the Lease
            procs[leader].wait(10)
            scale(kubeconfig, 3)
            wait_until(lambda: lease_holder(kubeconfig) == standby, 30, "the standby to take over")
            wait_until(lambda: owned_pods(kubeconfig, uid) == 3, 60, "the new leader to reconcile")
            assert owned_pods(kubeconfig, uid) == 3, "no duplicate Pods"

            procs[standby].send_signal(signal.SIGTERM)
            assert procs[standby].wait(30) == 0, _logs(tmp_path)
            assert lease_holder(kubeconfig) == "", "a graceful stop releases the Lease"


def _logs(tmp_path: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(tmp_path.glob("*.log")))


def _ready(kubeconfig: Path) -> bool:
    async def probe(client: Any) -> bool:
        from pumice.api.scheme import LEASE

        try:
            await client.list(LEASE, "kube-system")
            return True
        except Exception:
            return False

    try:
        return bool(run(probe, kubeconfig))
    except Exception:
        return False
