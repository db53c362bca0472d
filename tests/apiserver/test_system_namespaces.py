"""The system namespaces come back when deleted (trial 19 F-1: after ``kubectl delete ns --all``,
``kube-node-lease`` was never made again, so every Node's Lease renewal failed for good and all
Nodes went NotReady until a restart).

Ports kube-apiserver's pkg/controlplane/controller/systemnamespaces/system_namespaces_controller.go:
a pass creates each missing system namespace, leaves a Terminating one alone, and runs every
interval while the server listens."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from pumice.api.scheme import NAMESPACE
from pumice.apiserver.registry import DeleteOptions
from pumice.apiserver.systemnamespaces import SYSTEM_NAMESPACES, SystemNamespacesController
from pumice.client.base import ApiError
from pumice.testing.cluster import HttpServer, LocalCluster, serve_http
from pumice.testing.kubectl import Kubectl

INTERVAL = 0.2


async def remove_namespace(c: LocalCluster, name: str) -> None:
    """Delete ``name`` and finalize it (what the namespace controller does once it is empty)."""
    await c.server.registry.delete(NAMESPACE, None, name, DeleteOptions())
    ns = await c.client.get(NAMESPACE, name)
    ns["spec"]["finalizers"] = []
    await c.server.registry.update(NAMESPACE, None, name, ns, sub="finalize")
    with pytest.raises(ApiError) as e:
        await c.client.get(NAMESPACE, name)
    assert e.value.code == 404


def controller(c: LocalCluster) -> SystemNamespacesController:
    return SystemNamespacesController(c.server.registry, c.server.clock, interval=INTERVAL)


def test_the_system_namespaces_are_kube_apiservers() -> None:
    assert SYSTEM_NAMESPACES == ("kube-system", "kube-public", "kube-node-lease")


async def test_a_pass_makes_a_removed_system_namespace_again_and_a_second_pass_writes_nothing(
        cluster: LocalCluster) -> None:
    old = (await cluster.client.get(NAMESPACE, "kube-node-lease"))["metadata"]["uid"]
    await remove_namespace(cluster, "kube-node-lease")
    ctl = controller(cluster)
    assert await ctl.sync() == ["kube-node-lease"]
    new = await cluster.client.get(NAMESPACE, "kube-node-lease")
    assert new["metadata"]["uid"] != old and new["status"]["phase"] == "Active"
    rev = cluster.server.store.revision
    assert await ctl.sync() == []
    assert cluster.server.store.revision == rev


async def test_a_terminating_system_namespace_is_left_alone(cluster: LocalCluster) -> None:
    await cluster.server.registry.delete(NAMESPACE, None, "kube-node-lease", DeleteOptions())
    rev = cluster.server.store.revision
    assert await controller(cluster).sync() == []
    assert cluster.server.store.revision == rev
    assert (await cluster.client.get(NAMESPACE, "kube-node-lease"))["status"]["phase"] == "Terminating"


async def test_a_refused_create_is_logged_and_the_other_namespaces_are_still_made(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    await remove_namespace(cluster, "kube-node-lease")
    ctl = SystemNamespacesController(cluster.server.registry, cluster.server.clock,
                                     ("kube-system", "Not_A_Name", "kube-node-lease"))
    assert await ctl.sync() == ["kube-node-lease"]
    assert "Unable to create required kubernetes system namespace Not_A_Name: StatusError" in caplog.text


# ------------------------------------------------------------------ a listening server


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("sysns"), system_namespaces_interval=INTERVAL) as s:
        yield s


@pytest.mark.kubectl
def test_kubectl_delete_of_kube_node_lease_is_undone_by_the_server(kubectl: Kubectl) -> None:
    old = json.loads(kubectl("get", "ns", "kube-node-lease", "-o", "json").stdout)["metadata"]["uid"]
    kubectl("delete", "ns", "kube-node-lease", "--wait=false")
    kubectl("replace", "--raw", "/api/v1/namespaces/kube-node-lease/finalize", "-f", "-",
            stdin=json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-node-lease"},
                              "spec": {"finalizers": []}}))
    deadline = time.monotonic() + 20
    while True:
        p = kubectl("get", "ns", "kube-node-lease", "-o", "json", check=False)
        if p.returncode == 0 and json.loads(p.stdout)["metadata"]["uid"] != old:
            break
        assert time.monotonic() < deadline, f"kube-node-lease not made again: {p.stdout} {p.stderr}"
        time.sleep(INTERVAL / 2)
    assert json.loads(p.stdout)["status"]["phase"] == "Active"


async def test_a_memory_error_in_a_pass_is_raised_not_logged_and_carried_on(
        cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 19 R-17: ``except Exception`` took MemoryError (FATAL_TYPES) for a refused create."""
    await remove_namespace(cluster, "kube-node-lease")

    async def out_of_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError("injected")

    monkeypatch.setattr(cluster.server.registry, "create", out_of_memory)
    with pytest.raises(MemoryError, match="injected"):
        await controller(cluster).sync()


async def test_the_server_stops_with_the_error_its_system_namespaces_loop_ended_with(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Review 19 R-17: serve() ran the loop as a task nobody looked at until shutdown; a loop that
    ended with an error left the server serving without it."""
    import asyncio

    from pumice.apiserver.server import APIServer

    async def dies(self: SystemNamespacesController, *, wait_first: bool = False) -> None:
        await asyncio.sleep(0.1)
        raise MemoryError("injected")

    monkeypatch.setattr(SystemNamespacesController, "run", dies)
    server = APIServer(None)
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(server.serve("127.0.0.1", 0, tls=False), 30)
    assert "API server: the system-namespaces loop ended; stopping the server" in caplog.text
