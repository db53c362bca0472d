"""The official kubernetes client and lightkube, over HTTPS and over the in-process transport."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig
from lightkube.core.exceptions import ApiError as LightkubeApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.core_v1 import ServicePort, ServiceSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Pod, Service

from pumice.testing.cluster import HttpServer, LocalCluster, local_cluster, serve_http


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("clients"), history=5) as s:
        yield s


@pytest.fixture(scope="module")
def core(srv: HttpServer) -> k8s.CoreV1Api:
    api_client = k8s_config.new_client_from_config(config_file=str(srv.kubeconfig))
    return k8s.CoreV1Api(api_client)


def cm_body(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


# ---- official client over HTTPS ------------------------------------------------------------


def test_official_client_crud(core: k8s.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", cm_body("k1", a="1"))
    assert created.metadata.uid and created.metadata.resource_version
    got = core.read_namespaced_config_map("k1", "default")
    assert got.data == {"a": "1"}
    names = [c.metadata.name for c in core.list_namespaced_config_map("default").items]
    assert "k1" in names
    patched = core.patch_namespaced_config_map("k1", "default", {"data": {"b": "2"}})
    assert patched.data == {"a": "1", "b": "2"}
    core.delete_namespaced_config_map("k1", "default")
    with pytest.raises(ApiException) as e:
        core.read_namespaced_config_map("k1", "default")
    assert e.value.status == 404


def test_official_client_conflict_on_stale_update(core: k8s.CoreV1Api) -> None:
    cm = core.create_namespaced_config_map("default", cm_body("k2", a="1"))
    cm.data = {"a": "2"}
    core.replace_namespaced_config_map("k2", "default", cm)
    cm.data = {"a": "3"}
    with pytest.raises(ApiException) as e:
        core.replace_namespaced_config_map("k2", "default", cm)
    assert e.value.status == 409 and "Conflict" in e.value.body


def test_official_client_status_subresource(core: k8s.CoreV1Api) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sp"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    core.create_namespaced_pod("default", pod)
    out = core.patch_namespaced_pod_status("sp", "default", {"status": {"phase": "Running"}})
    assert out.status.phase == "Running"
    out = core.patch_namespaced_pod("sp", "default", {"status": {"phase": "Failed"}})
    assert out.status.phase == "Running"


def test_official_client_watch_sees_events(core: k8s.CoreV1Api) -> None:
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", cm_body("k3"))
    w = k8s_watch.Watch()
    seen = []
    for ev in w.stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=2):
        seen.append((ev["type"], ev["object"].metadata.name))
        if ev["object"].metadata.name == "k3":
            w.stop()
    assert ("ADDED", "k3") in seen


def test_official_client_compacted_watch_is_410(core: k8s.CoreV1Api) -> None:
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    for i in range(8):
        core.create_namespaced_config_map("default", cm_body(f"churn{i}"))
    w = k8s_watch.Watch()
    with pytest.raises(ApiException) as e:
        for _ in w.stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=2):
            pass
    assert e.value.status == 410


# ---- lightkube over HTTPS and in-process ---------------------------------------------------


async def _lightkube_round_trip(lk: AsyncClient, name: str) -> None:
    cm = await lk.create(ConfigMap(metadata=ObjectMeta(name=name, namespace="default"), data={"a": "1"}))
    assert cm.metadata.uid
    got = await lk.get(ConfigMap, name, namespace="default")
    assert got.data == {"a": "1"}
    names = [c.metadata.name async for c in lk.list(ConfigMap, namespace="default")]
    assert name in names
    patched = await lk.patch(ConfigMap, name, {"data": {"b": "2"}}, namespace="default")
    assert patched.data == {"a": "1", "b": "2"}
    applied = await lk.apply(ConfigMap(metadata=ObjectMeta(name=name + "-ssa", namespace="default"),
                                            data={"x": "y"}), field_manager="test")
    assert applied.data == {"x": "y"}
    await lk.delete(ConfigMap, name, namespace="default")
    with pytest.raises(LightkubeApiError) as e:
        await lk.get(ConfigMap, name, namespace="default")
    assert e.value.status.code == 404


async def test_lightkube_over_https(srv: HttpServer) -> None:
    lk = AsyncClient(KubeConfig.from_file(srv.kubeconfig))
    await _lightkube_round_trip(lk, "lk-http")
    await lk.close()


async def test_lightkube_in_process_with_watch_and_custom_resources() -> None:
    async with local_cluster() as c:
        lk = c.client.lightkube()
        await _lightkube_round_trip(lk, "lk-local")
        seen: list[str] = []

        async def watch() -> None:
            async for op, pod in lk.watch(Pod, namespace="default"):
                seen.append(f"{op} {pod.metadata.name}")
                if len(seen) == 1:
                    return

        task = asyncio.create_task(watch())
        await asyncio.sleep(0.01)
        await c.client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w1", "namespace": "default"},
                               "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        await asyncio.wait_for(task, 5)
        assert seen == ["ADDED w1"]
        RayCluster = create_namespaced_resource("ray.io", "v1", "RayCluster", "rayclusters")
        rc = await lk.create(RayCluster(metadata={"name": "rc1", "namespace": "default"},
                                        spec={"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
                                            "containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}}}))
        assert rc.metadata.generation == 1
        out = await lk.patch(RayCluster.Status, "rc1", {"status": {"state": "ready"}}, namespace="default",
                             patch_type=__import__("lightkube").types.PatchType.MERGE)
        assert out.status["state"] == "ready"


async def test_official_client_and_lightkube_apply_service_ports_keyed_by_port_and_protocol(
        srv: HttpServer, core: k8s.CoreV1Api) -> None:
    """Server-side apply from both Python clients: Service ports are one list keyed by port and
    protocol (TCP when omitted), so two ports 53 are two items and a second manager's name for
    the UDP one conflicts until forced (kube-openapi's list markers, as upstream records them)."""
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "dns", "namespace": "default"},
           "spec": {"selector": {"app": "dns"}, "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                                                        {"name": "dns-tcp", "port": 53}]}}
    await asyncio.to_thread(core.patch_namespaced_service, "dns", "default", svc, field_manager="py-a",
                            _content_type="application/apply-patch+yaml")
    lk = AsyncClient(KubeConfig.from_file(srv.kubeconfig))
    mine = Service(metadata=ObjectMeta(name="dns", namespace="default"),
                   spec=ServiceSpec(ports=[ServicePort(port=53, protocol="UDP", name="udp")]))
    with pytest.raises(LightkubeApiError) as e:
        await lk.apply(mine, field_manager="lk-b")
    assert e.value.status.code == 409
    assert e.value.status.message == ('Apply failed with 1 conflict: conflict with "py-a": '
                                      '.spec.ports[port=53,protocol="UDP"].name')
    out = await lk.apply(mine, field_manager="lk-b", force=True)
    await lk.close()
    assert [(p.port, p.protocol, p.name) for p in out.spec.ports] == [(53, "UDP", "udp"), (53, "TCP", "dns-tcp")]
    got = await asyncio.to_thread(core.read_namespaced_service, "dns", "default")
    fields = {e.manager: e.fields_v1 for e in got.metadata.managed_fields if e.operation == "Apply"}
    assert fields["lk-b"] == {"f:spec": {"f:ports": {'k:{"port":53,"protocol":"UDP"}': {
        ".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}}}}
    assert fields["py-a"] == {"f:spec": {"f:ports": {
        'k:{"port":53,"protocol":"TCP"}': {".": {}, "f:name": {}, "f:port": {}},
        'k:{"port":53,"protocol":"UDP"}': {".": {}, "f:port": {}, "f:protocol": {}}}, "f:selector": {}}}


async def test_pumice_client_over_https(srv: HttpServer) -> None:
    c = srv.client()
    cms = c.scheme.by_api_version_kind("v1", "ConfigMap")
    obj = await c.create(cm_body("pc1") | {"metadata": {"name": "pc1", "namespace": "default"}})
    assert (await c.get(cms, "pc1", "default"))["metadata"]["uid"] == obj["metadata"]["uid"]
    rcs = await c.resolve("ray.io/v1", "RayCluster")
    assert rcs.plural == "rayclusters" and "status" in rcs.subresources
    await c.close()


async def test_cluster_fixture_shares_the_scheme(cluster: LocalCluster) -> None:
    assert cluster.client.scheme is cluster.scheme
    assert cluster.scheme.by_api_version_kind("scheduling.volcano.sh/v1beta1", "PodGroup") is not None
    _ = Path
