"""The ``default/kubernetes`` Service, Endpoints and EndpointSlice the API server keeps (trial 13
F-6): made at start, with the first address of the service range taken from the allocator; with a
listening server, the Endpoints and EndpointSlice with its advertised address and port, recreated
after a delete and put back after an edit; seen by real kubectl, the official client and lightkube.

Ports kube-apiserver's behaviour: pkg/controlplane/controller/kubernetesservice/controller.go and
pkg/controlplane/reconcilers (lease.go, endpointsadapter.go)."""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from lightkube import Client as LightkubeClient
from lightkube.config.kubeconfig import KubeConfig
from lightkube.resources.core_v1 import Endpoints, Service
from lightkube.resources.discovery_v1 import EndpointSlice

from pumice.api.scheme import ENDPOINT_SLICE, ENDPOINTS, SERVICE
from pumice.apiserver.kubernetesservice import (
    KubernetesServiceController,
    advertise_address,
    endpoint_slice_from_endpoints,
    kubernetes_endpoints,
    kubernetes_service,
    service_ip,
)
from pumice.apiserver.registry import DeleteOptions
from pumice.client.base import ApiError
from pumice.testing.cluster import HttpServer, LocalCluster, local_cluster, serve_http
from pumice.testing.kubectl import Kubectl

ADVERTISED = "192.0.2.10"
INTERVAL = 0.2


# ------------------------------------------------------------------ pure builders


def test_the_service_ip_is_the_first_address_of_the_service_range() -> None:
    assert service_ip("10.96.0.0/12") == "10.96.0.1"
    assert service_ip("172.30.0.0/16") == "172.30.0.1"


def test_the_service_is_built_as_kube_apiserver_creates_it() -> None:
    assert kubernetes_service("10.96.0.1", 6443) == {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"provider": "kubernetes", "component": "apiserver"}},
        "spec": {"ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}],
                 "clusterIP": "10.96.0.1", "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
                 "type": "ClusterIP"},
    }


def test_the_endpoint_slice_is_derived_from_the_endpoints() -> None:
    ep = kubernetes_endpoints("192.0.2.10", 6443)
    assert ep["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}
    assert endpoint_slice_from_endpoints(ep) == {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["192.0.2.10"], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}],
    }


def test_a_slice_of_ipv6_endpoints_has_address_type_ipv6_and_keeps_not_ready_ones() -> None:
    ep = {"metadata": {"name": "kubernetes", "namespace": "default"},
          "subsets": [{"addresses": [{"ip": "fd00::1"}], "notReadyAddresses": [{"ip": "fd00::2"}]}]}
    es = endpoint_slice_from_endpoints(ep)
    assert es["addressType"] == "IPv6" and "ports" not in es
    assert es["endpoints"] == [{"addresses": ["fd00::1"], "conditions": {"ready": True}},
                               {"addresses": ["fd00::2"], "conditions": {"ready": False}}]


def test_a_specific_bind_address_is_advertised_and_loopback_never_is() -> None:
    assert advertise_address("192.0.2.77") == "192.0.2.77"
    for host in ("127.0.0.1", "0.0.0.0", "localhost"):
        got = advertise_address(host)
        assert got is None or not ipaddress.ip_address(got).is_loopback


# ------------------------------------------------------------------ in-process server


async def get(c: LocalCluster, rk: Any, name: str = "kubernetes", ns: str = "default") -> dict[str, Any] | None:
    try:
        out: dict[str, Any] = await c.client.get(rk, name, ns)
    except ApiError as e:
        if e.code == 404:
            return None
        raise
    return out


async def test_a_server_that_does_not_listen_has_the_service_and_no_endpoints(cluster: LocalCluster) -> None:
    svc = await get(cluster, SERVICE)
    assert svc is not None
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert svc["spec"]["clusterIP"] == "10.96.0.1" and svc["spec"]["clusterIPs"] == ["10.96.0.1"]
    assert svc["spec"]["ipFamilyPolicy"] == "SingleStack" and svc["spec"]["type"] == "ClusterIP"
    assert "selector" not in svc["spec"]
    assert svc["spec"]["ports"] == [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}]
    assert await get(cluster, ENDPOINTS) is None
    assert await get(cluster, ENDPOINT_SLICE) is None


async def test_the_service_ip_comes_from_the_configured_range() -> None:
    async with local_cluster(service_cluster_ip_range="172.30.0.0/16") as c:
        svc = await get(c, SERVICE)
        assert svc is not None and svc["spec"]["clusterIP"] == "172.30.0.1"


async def test_no_other_service_can_have_the_kubernetes_service_ip(cluster: LocalCluster) -> None:
    with pytest.raises(ApiError) as e:
        await cluster.client.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "grab"},
                                     "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 80}]}})
    assert e.value.code == 422 and "provided IP is already allocated" in e.value.message


def controller(c: LocalCluster, *, port: int = 7443, ip: str | None = ADVERTISED) -> KubernetesServiceController:
    return KubernetesServiceController(c.server.registry, c.server.clock, service_ip="10.96.0.1",
                                       public_port=port, public_ip=ip)


async def test_a_pass_writes_the_endpoints_and_slice_and_a_second_pass_writes_nothing(cluster: LocalCluster) -> None:
    ctl = controller(cluster)
    await ctl.reconcile()
    ep = await get(cluster, ENDPOINTS)
    es = await get(cluster, ENDPOINT_SLICE)
    assert ep is not None and es is not None
    assert ep["subsets"] == [{"addresses": [{"ip": ADVERTISED}],
                              "ports": [{"name": "https", "port": 7443, "protocol": "TCP"}]}]
    assert es["addressType"] == "IPv4"
    assert es["endpoints"] == [{"addresses": [ADVERTISED], "conditions": {"ready": True}}]
    assert es["ports"] == [{"name": "https", "port": 7443, "protocol": "TCP"}]
    assert es["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
    assert "ownerReferences" not in es["metadata"]
    svc = await get(cluster, SERVICE)
    assert svc is not None and svc["spec"]["ports"][0]["targetPort"] == 7443  # the first pass moved it
    rev = cluster.server.store.revision
    await ctl.reconcile()
    assert cluster.server.store.revision == rev


async def test_deleted_objects_come_back_at_the_next_pass(cluster: LocalCluster) -> None:
    ctl = controller(cluster)
    await ctl.reconcile()
    uids = {rk.kind: (await get(cluster, rk) or {})["metadata"]["uid"] for rk in (SERVICE, ENDPOINTS, ENDPOINT_SLICE)}
    for rk in (SERVICE, ENDPOINTS, ENDPOINT_SLICE):
        await cluster.client.delete(rk, "kubernetes", "default")
    await ctl.reconcile()
    for rk in (SERVICE, ENDPOINTS, ENDPOINT_SLICE):
        obj = await get(cluster, rk)
        assert obj is not None and obj["metadata"]["uid"] != uids[rk.kind], rk.kind
    svc = await get(cluster, SERVICE)
    assert svc is not None and svc["spec"]["clusterIP"] == "10.96.0.1"


async def test_edited_endpoints_and_slice_are_put_back_and_other_labels_of_the_endpoints_kept(
        cluster: LocalCluster) -> None:
    ctl = controller(cluster)
    await ctl.reconcile()
    ep = await get(cluster, ENDPOINTS)
    assert ep is not None
    ep["metadata"]["labels"] = {"team": "a"}
    ep["subsets"] = [{"addresses": [{"ip": "10.1.2.3"}, {"ip": "10.1.2.4"}],
                      "ports": [{"name": "https", "port": 1, "protocol": "TCP"}]}]
    await cluster.client.update(ep)
    es = await get(cluster, ENDPOINT_SLICE)
    assert es is not None
    es["metadata"]["labels"]["extra"] = "x"
    es["endpoints"] = [{"addresses": ["10.9.9.9"], "conditions": {"ready": False}}]
    await cluster.client.update(es)
    await ctl.reconcile()
    ep, es = await get(cluster, ENDPOINTS), await get(cluster, ENDPOINT_SLICE)
    assert ep is not None and es is not None
    assert ep["metadata"]["labels"] == {"team": "a", "endpointslice.kubernetes.io/skip-mirror": "true"}
    assert ep["subsets"] == [{"addresses": [{"ip": ADVERTISED}],
                              "ports": [{"name": "https", "port": 7443, "protocol": "TCP"}]}]
    assert es["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
    assert es["endpoints"] == [{"addresses": [ADVERTISED], "conditions": {"ready": True}}]


async def test_a_slice_of_another_address_type_is_made_again(cluster: LocalCluster) -> None:
    ctl = controller(cluster)
    await ctl.reconcile()
    await cluster.client.delete(ENDPOINT_SLICE, "kubernetes", "default")
    await cluster.client.create({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                                 "metadata": {"name": "kubernetes", "namespace": "default"},
                                 "addressType": "IPv6", "endpoints": [{"addresses": ["fd00::1"]}]})
    await ctl.reconcile()
    es = await get(cluster, ENDPOINT_SLICE)
    assert es is not None and es["addressType"] == "IPv4"
    assert es["endpoints"] == [{"addresses": [ADVERTISED], "conditions": {"ready": True}}]


async def test_an_edited_service_is_left_after_the_first_pass(cluster: LocalCluster) -> None:
    ctl = controller(cluster)
    await ctl.reconcile()
    svc = await get(cluster, SERVICE)
    assert svc is not None
    svc["spec"]["ports"][0]["port"] = 8443
    await cluster.client.update(svc)
    await ctl.reconcile()
    svc = await get(cluster, SERVICE)
    assert svc is not None and svc["spec"]["ports"][0]["port"] == 8443  # kube-apiserver leaves it too
    await controller(cluster).reconcile()  # a restart's first pass puts the ports back
    svc = await get(cluster, SERVICE)
    assert svc is not None and svc["spec"]["ports"] == [
        {"name": "https", "protocol": "TCP", "port": 443, "targetPort": 7443}]


async def test_without_an_address_only_the_service_is_kept(cluster: LocalCluster) -> None:
    await cluster.client.delete(SERVICE, "kubernetes", "default")
    await controller(cluster, ip=None).reconcile()
    assert await get(cluster, SERVICE) is not None
    assert await get(cluster, ENDPOINTS) is None and await get(cluster, ENDPOINT_SLICE) is None


async def test_a_failed_pass_is_logged_and_the_next_one_succeeds(cluster: LocalCluster,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    await cluster.client.delete(SERVICE, "kubernetes", "default")
    await cluster.client.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "grab"},
                                 "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 80}]}})
    ctl = controller(cluster)
    assert not await ctl.reconcile_logged()
    assert "unable to sync kubernetes service" in caplog.text and "provided IP is already allocated" in caplog.text
    await cluster.server.registry.delete(SERVICE, "default", "grab", DeleteOptions())
    assert await ctl.reconcile_logged()
    svc = await get(cluster, SERVICE)
    assert svc is not None and svc["spec"]["clusterIP"] == "10.96.0.1"


async def test_a_memory_error_in_a_pass_is_raised_not_logged_and_carried_on(
        cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Review 20 V-1: ``except Exception`` took MemoryError (FATAL_TYPES) for a failed pass."""
    ctl = controller(cluster)

    async def out_of_memory() -> None:
        raise MemoryError("injected")

    monkeypatch.setattr(ctl, "reconcile", out_of_memory)
    with pytest.raises(MemoryError, match="injected"):
        await ctl.reconcile_logged()
    assert "unable to sync kubernetes service" not in caplog.text


async def test_the_server_stops_with_the_error_a_later_kubernetes_service_pass_raised(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Review 20 V-1: serve() waits on the loop, but the loop logged a MemoryError and went on."""
    import asyncio

    from pumice.apiserver.server import APIServer

    passes = 0
    real = KubernetesServiceController.reconcile

    async def second_pass_dies(self: KubernetesServiceController) -> None:
        nonlocal passes
        passes += 1
        if passes > 1:
            raise MemoryError("injected")
        await real(self)

    monkeypatch.setattr(KubernetesServiceController, "reconcile", second_pass_dies)
    server = APIServer(None, endpoint_reconciler_interval=0.1)
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(server.serve("127.0.0.1", 0, tls=False), 30)
    assert passes == 2
    assert "API server: the kubernetes-service loop ended; stopping the server" in caplog.text


# ------------------------------------------------------------------ a listening server


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("kubesvc"), advertise_address=ADVERTISED,
                    endpoint_reconciler_interval=INTERVAL) as s:
        yield s


@pytest.fixture(scope="module")
def kubectl(srv: HttpServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    home = tmp_path_factory.mktemp("kubesvc-home")
    return Kubectl(srv.kubeconfig, home, cache_dir=home / "cache")


def port_of(srv: HttpServer) -> int:
    return int(srv.url.rsplit(":", 1)[1])


def eventually(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    """Poll ``check`` until it returns a truthy value (the reconciler runs every INTERVAL s)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(INTERVAL / 2)
    raise AssertionError(f"not reached within {timeout}s: {last!r}")


@pytest.mark.kubectl
def test_kubectl_sees_the_service_its_endpoints_and_slice(srv: HttpServer, kubectl: Kubectl) -> None:
    port = port_of(srv)
    rows = kubectl("get", "svc", "kubernetes", "--no-headers").stdout.split()
    assert rows[:5] == ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
    assert kubectl("get", "ep", "kubernetes", "--no-headers").stdout.split()[:2] == ["kubernetes", f"{ADVERTISED}:{port}"]
    out = kubectl("get", "endpointslice").stdout.splitlines()
    assert out[0].split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert out[1].split()[:4] == ["kubernetes", "IPv4", str(port), ADVERTISED]
    described = kubectl("describe", "svc", "kubernetes").stdout
    for line in ("component=apiserver", "provider=kubernetes", "Type:                     ClusterIP",
                 "IP:                       10.96.0.1", "Port:                     https  443/TCP",
                 f"TargetPort:               {port}/TCP", f"Endpoints:                {ADVERTISED}:{port}"):
        assert line in described, line
    es = json.loads(kubectl("get", "endpointslice", "kubernetes", "-o", "json").stdout)
    assert es["apiVersion"] == "discovery.k8s.io/v1" and es["addressType"] == "IPv4"
    assert es["endpoints"] == [{"addresses": [ADVERTISED], "conditions": {"ready": True}}]
    assert es["ports"] == [{"name": "https", "port": port, "protocol": "TCP"}]
    assert es["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}


@pytest.mark.kubectl
def test_kubectl_delete_is_undone_by_the_server(srv: HttpServer, kubectl: Kubectl) -> None:
    old = {r: json.loads(kubectl("get", r, "kubernetes", "-o", "json").stdout)["metadata"]["uid"]
           for r in ("svc", "ep", "endpointslice")}
    kubectl("delete", "svc,ep,endpointslice", "kubernetes")

    def back() -> bool:
        for r, uid in old.items():
            p = kubectl("get", r, "kubernetes", "-o", "json", check=False)
            if p.returncode != 0 or json.loads(p.stdout)["metadata"]["uid"] == uid:
                return False
        return True

    eventually(back)
    assert kubectl("get", "svc", "kubernetes", "-o", "jsonpath={.spec.clusterIP}").stdout == "10.96.0.1"


@pytest.mark.kubectl
def test_kubectl_edits_of_the_endpoints_and_slice_are_put_back(srv: HttpServer, kubectl: Kubectl) -> None:
    port = port_of(srv)
    # the server's answer to each patch is the object it stored: the edit did land before the repair
    assert kubectl("patch", "ep", "kubernetes", "--type", "merge", "-p",
                   '{"subsets":[{"addresses":[{"ip":"10.1.2.3"}],"ports":[{"name":"https","port":1,"protocol":"TCP"}]}]}',
                   "-o", "jsonpath={.subsets[0].addresses[0].ip}").stdout == "10.1.2.3"
    assert kubectl("patch", "endpointslice", "kubernetes", "--type", "merge", "-p",
                   '{"endpoints":[{"addresses":["10.9.9.9"],"conditions":{"ready":false}}]}',
                   "-o", "jsonpath={.endpoints[0].addresses[0]}").stdout == "10.9.9.9"
    eventually(lambda: kubectl("get", "ep", "kubernetes", "-o", "jsonpath={.subsets}").stdout ==
               json.dumps([{"addresses": [{"ip": ADVERTISED}],
                            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}], separators=(",", ":")))
    eventually(lambda: kubectl("get", "endpointslice", "kubernetes", "-o", "jsonpath={.endpoints[0].addresses[0]}"
                               ).stdout == ADVERTISED)


def test_the_official_client_and_lightkube_read_them(srv: HttpServer) -> None:
    port = port_of(srv)
    api = k8s_config.new_client_from_config(config_file=str(srv.kubeconfig))
    svc = k8s.CoreV1Api(api).read_namespaced_service("kubernetes", "default")
    assert svc.spec.cluster_ip == "10.96.0.1" and svc.spec.ports[0].name == "https"
    assert svc.spec.ports[0].port == 443 and svc.spec.ports[0].target_port == port
    ep = k8s.CoreV1Api(api).read_namespaced_endpoints("kubernetes", "default")
    assert ep.subsets[0].addresses[0].ip == ADVERTISED and ep.subsets[0].ports[0].port == port
    slices = k8s.DiscoveryV1Api(api).list_namespaced_endpoint_slice(
        "default", label_selector="kubernetes.io/service-name=kubernetes").items
    assert [(s.metadata.name, s.address_type, s.endpoints[0].addresses, s.endpoints[0].conditions.ready)
            for s in slices] == [("kubernetes", "IPv4", [ADVERTISED], True)]
    lk = LightkubeClient(KubeConfig.from_file(str(srv.kubeconfig)))
    try:
        assert lk.get(Service, "kubernetes", namespace="default").spec.clusterIP == "10.96.0.1"
        assert lk.get(Endpoints, "kubernetes", namespace="default").subsets[0].addresses[0].ip == ADVERTISED
        es = lk.get(EndpointSlice, "kubernetes", namespace="default")
        assert es.addressType == "IPv4" and es.ports[0].port == port and es.ports[0].name == "https"
    finally:
        lk.close()


def test_a_restart_on_another_port_moves_the_target_port_and_endpoints(tmp_path: Path) -> None:
    with serve_http(tmp_path, advertise_address=ADVERTISED) as first:
        first_port = port_of(first)
    with serve_http(tmp_path, advertise_address="192.0.2.11") as second:
        port = port_of(second)
        if port == first_port:
            pytest.skip("the same free port came twice")
        assert second.server is not None
        store = second.server.store
        svc = store.get("/services", "default", "kubernetes")
        ep = store.get("/endpoints", "default", "kubernetes")
        es = store.get("discovery.k8s.io/endpointslices", "default", "kubernetes")
        assert svc is not None and ep is not None and es is not None
        assert svc.obj["spec"]["ports"][0]["targetPort"] == port
        assert ep.obj["subsets"][0] == {"addresses": [{"ip": "192.0.2.11"}],
                                        "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}
        assert es.obj["endpoints"][0]["addresses"] == ["192.0.2.11"] and es.obj["ports"][0]["port"] == port
