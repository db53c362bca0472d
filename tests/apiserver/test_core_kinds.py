"""core/v1 PodTemplates and ComponentStatuses, served as kube-apiserver serves them. The expected
answers (causes, list bodies, the Warning header, kubectl's columns) were taken from a real
kube-apiserver v1.34.4 (tools/build_kube.py) answering the same requests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from pumice.apiserver.componentstatus import Probe, task_probe
from pumice.client.base import ApiError
from pumice.testing.cluster import HttpServer, LocalCluster, serve_http
from pumice.testing.kubectl import Kubectl

DEPRECATED = '299 - "v1 ComponentStatus is deprecated in v1.19+"'


def pod_template(name: str, template: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name, "namespace": "default"},
            "template": template}


CONTAINERS = {"containers": [{"name": "c", "image": "busybox"}, {"name": "d", "image": "nginx:1"}]}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("corekinds")) as s:
        yield s


# ---- PodTemplate ---------------------------------------------------------------------------------


async def test_a_pod_template_is_defaulted_as_a_pod_spec_and_counts_template_changes(cluster: LocalCluster) -> None:
    out = await cluster.client.create(pod_template("t1", {"metadata": {"labels": {"a": "b"}}, "spec": {
        "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}]}}))
    spec = out["template"]["spec"]
    assert (spec["restartPolicy"], spec["dnsPolicy"], spec["schedulerName"], spec["terminationGracePeriodSeconds"]) \
        == ("Always", "ClusterFirst", "default-scheduler", 30)
    assert spec["containers"][0]["resources"] == {"limits": {"cpu": "1"}}  # no requests from limits in a template
    assert out["metadata"]["generation"] == 1
    out["metadata"]["labels"] = {"x": "y"}
    same = await cluster.client.update(out)
    assert same["metadata"]["generation"] == 1
    same["template"]["metadata"]["labels"] = {"a": "c"}
    changed = await cluster.client.update(same)
    assert changed["metadata"]["generation"] == 2


async def test_a_pod_template_is_validated_as_a_pod_template_spec(cluster: LocalCluster) -> None:
    with pytest.raises(ApiError) as e:
        await cluster.client.create(pod_template("t2", {"metadata": {"labels": {"a b": "c"}}}))
    assert (e.value.code, e.value.reason) == (422, "Invalid")
    causes = [(c["field"], c["reason"]) for c in e.value.status["details"]["causes"]]
    assert causes == [("template.labels", "FieldValueInvalid"), ("template.spec.containers", "FieldValueRequired")]
    with pytest.raises(ApiError) as e:
        await cluster.client.create(pod_template("t3", {"spec": {
            **CONTAINERS, "restartPolicy": "Never",
            "ephemeralContainers": [{"name": "e", "image": "busybox"}]}}))
    assert [(c["field"], c["message"]) for c in e.value.status["details"]["causes"]] == [
        ("template.spec.ephemeralContainers", "Forbidden: ephemeral containers not allowed in pod template")]


def test_kubectl_gets_pod_templates_with_upstreams_columns(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "pt.yaml"
    manifest.write_text("apiVersion: v1\nkind: PodTemplate\nmetadata: {name: web}\n"
                        "template:\n  metadata: {labels: {b: '2', a: '1'}}\n  spec:\n    containers:\n"
                        "    - {name: c, image: busybox}\n    - {name: d, image: 'nginx:1'}\n")
    kubectl("apply", "-f", str(manifest))
    lines = kubectl("get", "podtemplates").stdout.splitlines()
    assert lines[0].split() == ["NAME", "CONTAINERS", "IMAGES", "POD", "LABELS"]
    assert lines[1].split() == ["web", "c,d", "busybox,nginx:1", "a=1,b=2"]
    resources = kubectl("api-resources", "--api-group=").stdout
    assert any(ln.split() == ["podtemplates", "v1", "true", "PodTemplate"] for ln in resources.splitlines())


# ---- ComponentStatus -----------------------------------------------------------------------------


async def test_component_statuses_report_the_storage_and_say_they_are_deprecated(
        cluster: LocalCluster, http: httpx2.AsyncClient) -> None:
    r = await http.get("/api/v1/componentstatuses")
    assert r.status_code == 200 and r.headers["warning"] == DEPRECATED
    assert r.json() == {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": [
        {"metadata": {"name": "storage"}, "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}]}
    one = await http.get("/api/v1/componentstatuses/storage")
    assert one.headers["warning"] == DEPRECATED
    assert one.json() == {"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": "storage"},
                          "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}


async def test_component_statuses_are_read_only_and_not_watched(cluster: LocalCluster,
                                                                 http: httpx2.AsyncClient) -> None:
    missing = await http.get("/api/v1/componentstatuses/etcd-0")
    assert (missing.status_code, missing.headers["warning"]) == (404, DEPRECATED)
    assert missing.json()["message"] == 'componentstatus "etcd-0" not found'
    assert missing.json()["details"] == {"name": "etcd-0", "kind": "componentstatus"}
    watch = await http.get("/api/v1/componentstatuses", params={"watch": "true"})
    assert (watch.status_code, watch.json()["message"]) == (
        405, 'watch is not supported on resources of kind "componentstatuses"')
    post = await http.post("/api/v1/componentstatuses", json={})
    assert post.status_code == 405
    labelled = await http.get("/api/v1/componentstatuses", params={"labelSelector": "a=b"})
    assert labelled.json()["items"] == []
    named = await http.get("/api/v1/componentstatuses", params={"fieldSelector": "metadata.name=storage"})
    assert [i["metadata"]["name"] for i in named.json()["items"]] == ["storage"]


async def test_a_stopped_component_is_unhealthy_with_how_it_ended(cluster: LocalCluster,
                                                                   http: httpx2.AsyncClient) -> None:
    async def fails() -> None:
        raise RuntimeError("lost the API server")

    running = asyncio.create_task(asyncio.sleep(3600))
    failed = asyncio.create_task(fails())
    await asyncio.wait([failed])
    cluster.server.add_component("scheduler", task_probe(running))
    cluster.server.add_component("controller-manager", task_probe(failed))

    async def broken() -> Probe:
        raise OSError("no route")

    cluster.server.add_component("node-agent", broken)
    try:
        items = (await http.get("/api/v1/componentstatuses")).json()["items"]
    finally:
        running.cancel()
    assert {i["metadata"]["name"]: i["conditions"][0] for i in items} == {
        "controller-manager": {"type": "Healthy", "status": "False",
                               "message": "ended with RuntimeError: lost the API server"},
        "node-agent": {"type": "Healthy", "status": "Unknown", "error": "OSError: no route"},
        "scheduler": {"type": "Healthy", "status": "True", "message": "ok"},
        "storage": {"type": "Healthy", "status": "True", "message": "ok"},
    }


def test_kubectl_get_componentstatuses_prints_the_warning_and_upstreams_columns(kubectl: Kubectl) -> None:
    done = kubectl("get", "cs")
    assert "Warning: v1 ComponentStatus is deprecated in v1.19+" in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "MESSAGE", "ERROR"]
    assert lines[1].split() == ["storage", "Healthy", "ok"]
    assert kubectl("get", "componentstatus", "storage", "-o", "jsonpath={.conditions[0].status}").stdout == "True"
