"""ObjectMeta and DeleteOptions rules around deletion (trial 8 F-5), through the HTTP API."""

from __future__ import annotations

import httpx2

from pumice.testing.cluster import LocalCluster

CMS = "/api/v1/namespaces/default/configmaps"
MERGE = {"Content-Type": "application/merge-patch+json"}


def http(cluster: LocalCluster) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=cluster.app), base_url="http://apiserver",
                              headers={"Authorization": f"Bearer {cluster.server.token}"})


async def test_an_object_being_deleted_takes_no_new_finalizer(cluster: LocalCluster) -> None:
    """Mirrors apimachinery ValidateNoNewFinalizers; removing one stays allowed."""
    async with http(cluster) as c:
        body = {"metadata": {"name": "fin2", "finalizers": ["example.com/x"]}}
        assert (await c.post(CMS, json=body)).status_code == 201
        assert (await c.delete(f"{CMS}/fin2")).status_code == 200
        r = await c.patch(f"{CMS}/fin2", headers=MERGE, content=b'{"metadata":{"finalizers":'
                          b'["example.com/x","example.com/z","example.com/y"]}}')
        assert r.status_code == 422, r.text
        assert r.json()["message"] == (
            'ConfigMap "fin2" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the '
            'object is being deleted, found new finalizers []string{"example.com/y", "example.com/z"}')
        assert r.json()["details"]["causes"] == [{"reason": "FieldValueForbidden", "field": "metadata.finalizers",
                                                  "message": r.json()["message"].split("metadata.finalizers: ")[1]}]
        r = await c.patch(f"{CMS}/fin2", headers=MERGE, content=b'{"metadata":{"finalizers":null}}')
        assert r.status_code == 200, r.text
        assert (await c.get(f"{CMS}/fin2")).status_code == 404


async def test_delete_options_with_both_orphan_dependents_and_propagation_policy_are_invalid(
        cluster: LocalCluster) -> None:
    """Mirrors apimachinery ValidateDeleteOptions; either one alone still deletes."""
    async with http(cluster) as c:
        for name in ("both1", "orphan1"):
            assert (await c.post(CMS, json={"metadata": {"name": name}})).status_code == 201
        r = await c.request("DELETE", f"{CMS}/both1",
                            json={"orphanDependents": True, "propagationPolicy": "Background"})
        assert r.status_code == 422, r.text
        assert r.json()["message"] == (
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Background": '
            "orphanDependents and deletionPropagation cannot be both set")
        assert (await c.get(f"{CMS}/both1")).status_code == 200
        r = await c.request("DELETE", f"{CMS}/orphan1", json={"orphanDependents": False})
        assert r.status_code == 200, r.text
