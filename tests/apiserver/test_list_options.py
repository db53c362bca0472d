"""List options of a list, a watch and a DELETE of a collection are decoded and validated alike,
before anything is read or deleted (trial 10 F-3: ``DELETE ...?limit=abc`` deleted every object)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest

from pumice.testing.cluster import LocalCluster

CMS = "/api/v1/namespaces/t10/configmaps"


@pytest.fixture
async def http(cluster: LocalCluster) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=cluster.app), base_url="http://apiserver",
                                  headers={"Authorization": f"Bearer {cluster.server.token}"}) as c:
        assert (await c.post("/api/v1/namespaces", json={"metadata": {"name": "t10"}})).status_code == 201
        for name in ("keep1", "keep2"):
            assert (await c.post(CMS, json={"metadata": {"name": name}})).status_code == 201
        yield c


@pytest.mark.parametrize(("query", "code", "message"), [
    ({"limit": "abc"}, 400, 'strconv.ParseInt: parsing "abc": invalid syntax'),
    ({"limit": ""}, 400, 'strconv.ParseInt: parsing "": invalid syntax'),
    ({"limit": "99999999999999999999"}, 400, 'strconv.ParseInt: parsing "99999999999999999999": value out of range'),
    ({"timeoutSeconds": "abc"}, 400, 'strconv.ParseInt: parsing "abc": invalid syntax'),
    ({"resourceVersion": "zzz"}, 400,
     'invalid resource version: resourceVersion: Invalid value: "zzz": strconv.ParseUint: parsing "zzz": invalid syntax'),
    ({"resourceVersionMatch": "NotOlderThan"}, 422,
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden '
     "unless resourceVersion is provided"),
    ({"sendInitialEvents": "true"}, 422,
     'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list'),
])
async def test_a_bad_list_option_refuses_a_delete_collection_as_it_refuses_a_list(
        http: httpx2.AsyncClient, query: dict[str, str], code: int, message: str) -> None:
    listed = await http.get(CMS, params=query)
    assert (listed.status_code, listed.json()["message"]) == (code, message)
    r = await http.delete(CMS, params=query)
    assert (r.status_code, r.json()["message"]) == (code, message)
    left = (await http.get(CMS)).json()["items"]
    assert [i["metadata"]["name"] for i in left] == ["keep1", "keep2"]


async def test_good_list_options_still_delete_the_collection(http: httpx2.AsyncClient) -> None:
    r = await http.delete(CMS, params={"limit": "1", "timeoutSeconds": "10", "labelSelector": ""})
    assert r.status_code == 200, r.text
    assert (await http.get(CMS)).json()["items"] == []


async def test_watch_is_any_value_but_false_or_0_as_the_parameter_codec_reads_it(http: httpx2.AsyncClient) -> None:
    r = await http.get(CMS, params={"watch": "abc", "timeoutSeconds": "1"})
    assert r.status_code == 200 and '"type":"ADDED"' in r.text, r.text
    r = await http.get(CMS, params={"watch": "False"})
    assert r.json()["kind"] == "ConfigMapList"


def _token(rv: int, start: list[str]) -> str:
    import base64
    import json

    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": start}).encode()).decode()


async def test_a_continue_token_with_rv_0_is_refused_and_a_negative_one_lists_the_latest(
        http: httpx2.AsyncClient) -> None:
    """storage.DecodeContinue refuses an encoded rv of 0; a negative one asks the store for the
    latest revision (trial 12 F-6 c: rv 0 and -1 were both taken as the list's revision)."""
    r = await http.get(CMS, params={"limit": "1", "continue": _token(0, ["t10", "keep1"])})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == ("invalid continue token: continue key is not valid: incorrect encoded start "
                                   "resourceVersion (version meta.k8s.io/v1)")
    first = (await http.get(CMS, params={"limit": "1"})).json()
    r = await http.get(CMS, params={"limit": "1", "continue": _token(-1, ["t10", "keep1"])})
    assert r.status_code == 200, r.text
    assert [i["metadata"]["name"] for i in r.json()["items"]] == ["keep2"]
    assert r.json()["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    r = await http.get(CMS, params={"continue": "!!"})
    assert r.status_code == 400
    assert r.json()["message"].startswith("invalid continue token: continue key is not valid: ")
