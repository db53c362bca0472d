"""Objects larger than etcd's request limit (1.5 MiB, --max-request-bytes) are refused as the
write to etcd is (trial 10 F-12: a 2.4 MB RayCluster was stored, and its 2.4 MB head Pod too)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest

from pumice.testing.cluster import LocalCluster

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def http(cluster: LocalCluster) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=cluster.app), base_url="http://apiserver",
                                  headers={"Authorization": f"Bearer {cluster.server.token}"}, timeout=60) as c:
        yield c


def pod(name: str, env_bytes: int) -> dict:
    env = [{"name": f"E{i}", "value": "x" * 1000} for i in range(env_bytes // 1000)]
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x", "env": env}]}}


def raycluster(name: str, env_bytes: int) -> dict:
    env = [{"name": f"E{i}", "value": "x" * 1000} for i in range(env_bytes // 1000)]
    template = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.9.0", "env": env}]}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": template}}}


async def test_a_pod_over_etcds_request_limit_is_refused_with_413(http: httpx2.AsyncClient) -> None:
    r = await http.post(PODS, json=pod("big", 1_700_000))
    assert r.status_code == 413, r.text[:300]
    assert (r.json()["reason"], r.json()["message"]) == ("RequestEntityTooLarge", "etcdserver: request is too large")
    assert (await http.get(f"{PODS}/big")).status_code == 404
    # a dry run never reaches etcd: upstream answers it
    assert (await http.post(PODS, json=pod("big", 1_700_000), params={"dryRun": "All"})).status_code == 201
    # just under the limit is stored
    assert (await http.post(PODS, json=pod("fits", 1_400_000))).status_code == 201


async def test_an_update_that_grows_over_the_limit_is_refused(http: httpx2.AsyncClient) -> None:
    url = "/apis/ray.io/v1/namespaces/default/rayclusters"
    assert (await http.post(url, json=raycluster("grows", 1_000))).status_code == 201
    bigger = raycluster("grows", 1_700_000)["spec"]
    r = await http.patch(f"{url}/grows", json={"spec": bigger}, headers={"Content-Type": "application/merge-patch+json"})
    assert (r.status_code, r.json()["message"]) == (413, "etcdserver: request is too large"), r.text[:300]
    stored = (await http.get(f"{url}/grows")).json()
    assert len(stored["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]) == 1


async def test_a_custom_resource_is_measured_as_its_json(http: httpx2.AsyncClient) -> None:
    r = await http.post("/apis/ray.io/v1/namespaces/default/rayclusters", json=raycluster("huge", 2_400_000))
    assert (r.status_code, r.json()["message"]) == (413, "etcdserver: request is too large"), r.text[:300]
    r = await http.post("/apis/ray.io/v1/namespaces/default/rayclusters", json=raycluster("ok", 1_000_000))
    assert r.status_code == 201, r.text[:300]


CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def many_keys(value: str, n: int = 2_800) -> dict[str, str]:
    """``n`` keys of 253 characters (the longest a key may be): their managedFields entries are
    as large as the keys."""
    return {f"k{i:06d}".ljust(253, "k"): value for i in range(n)}


async def test_a_patch_too_large_with_its_managed_fields_is_stored_without_them(http: httpx2.AsyncClient) -> None:
    """patch.go patchResource: a non-apply patch refused as too large is tried once more with
    managedFields set to nil. 2,800 long keys: their managedFields (~0.7 MB) push the patched
    ConfigMap (~1.4 MB of data) over etcd's 1.5 MiB; without them it fits."""
    r = await http.post(CONFIGMAPS, json={"metadata": {"name": "wide"}, "data": many_keys("x")},
                        params={"fieldManager": "creator"})
    assert r.status_code == 201, r.text[:300]
    assert [m["manager"] for m in r.json()["metadata"]["managedFields"]] == ["creator"]
    r = await http.patch(f"{CONFIGMAPS}/wide", json={"data": many_keys("y" * 250)},
                         headers={"Content-Type": "application/merge-patch+json"}, params={"fieldManager": "grower"})
    assert r.status_code == 200, r.text[:300]
    stored = (await http.get(f"{CONFIGMAPS}/wide")).json()
    assert stored["data"]["k002799".ljust(253, "k")] == "y" * 250
    assert "managedFields" not in stored["metadata"]


async def test_an_apply_too_large_with_its_managed_fields_is_refused(http: httpx2.AsyncClient) -> None:
    """The retry without managedFields is for the other patch types only (apply owns them)."""
    assert (await http.post(CONFIGMAPS, json={"metadata": {"name": "wide"}, "data": many_keys("x")},
                            params={"fieldManager": "creator"})).status_code == 201
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wide"}, "data": many_keys("y" * 250)}
    r = await http.patch(f"{CONFIGMAPS}/wide", json=body, params={"fieldManager": "applier", "force": "true"},
                         headers={"Content-Type": "application/apply-patch+yaml"})
    assert (r.status_code, r.json()["message"]) == (413, "etcdserver: request is too large"), r.text[:300]
    stored = (await http.get(f"{CONFIGMAPS}/wide")).json()
    assert stored["data"]["k000000".ljust(253, "k")] == "x"

