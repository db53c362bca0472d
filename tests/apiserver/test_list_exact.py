"""``resourceVersionMatch=Exact`` lists (trial 8 F-4): pumice keeps only the current revision, so
an older one is 410 Expired as a compacted one is on kube-apiserver, never today's state labelled
with the current revision."""

from __future__ import annotations

import httpx2

from pumice.testing.cluster import LocalCluster

CMS = "/api/v1/namespaces/default/configmaps"


async def test_an_exact_list_is_served_only_at_the_current_revision(cluster: LocalCluster) -> None:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=cluster.app), base_url="http://apiserver",
                                  headers={"Authorization": f"Bearer {cluster.server.token}"}) as c:
        assert (await c.post(CMS, json={"metadata": {"name": "a"}})).status_code == 201
        current = int((await c.get(CMS)).json()["metadata"]["resourceVersion"])
        r = await c.get(CMS, params={"resourceVersion": str(current), "resourceVersionMatch": "Exact"})
        assert r.status_code == 200 and r.json()["metadata"]["resourceVersion"] == str(current)
        assert [i["metadata"]["name"] for i in r.json()["items"]] == ["a"]
        assert (await c.post(CMS, json={"metadata": {"name": "b"}})).status_code == 201
        r = await c.get(CMS, params={"resourceVersion": str(current), "resourceVersionMatch": "Exact"})
        assert r.status_code == 410, r.text
        assert (r.json()["reason"], r.json()["message"]) == (
            "Expired", "The resourceVersion for the provided list is too old.")
        r = await c.get(CMS, params={"resourceVersion": str(current + 100), "resourceVersionMatch": "Exact"})
        assert r.status_code == 504, r.text
        assert r.json()["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
        # NotOlderThan still answers the current state
        r = await c.get(CMS, params={"resourceVersion": str(current), "resourceVersionMatch": "NotOlderThan"})
        assert r.status_code == 200 and len(r.json()["items"]) == 2
