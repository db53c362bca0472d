"""The ``dryRun`` option of every write verb is a list, checked as apimachinery's ValidateDryRun
checks it: every value must be ``All`` (trial 15 F-8: ``?dryRun=All&dryRun=Bogus`` was taken as a
dry run, and ``?dryRun=`` as no dry run)."""

from __future__ import annotations

import httpx2
import pytest

NS = "/api/v1/namespaces/default"
CM = f"{NS}/configmaps"


def _unsupported(kind: str, shown: str) -> str:
    return f'{kind}.meta.k8s.io "" is invalid: dryRun: Unsupported value: {shown}: supported values: "All"'


async def _configmap(http: httpx2.AsyncClient, name: str = "c", data: str = "1") -> None:
    resp = await http.post(CM, json={"metadata": {"name": name}, "data": {"k": data}})
    assert resp.status_code == 201, resp.text


async def _write(http: httpx2.AsyncClient, verb: str, query: str) -> httpx2.Response:
    merge = {"Content-Type": "application/merge-patch+json"}
    if verb == "POST":
        return await http.post(f"{CM}?{query}", json={"metadata": {"name": "new"}})
    if verb == "PUT":
        return await http.put(f"{CM}/c?{query}", json={"metadata": {"name": "c"}, "data": {"k": "2"}})
    if verb == "PATCH":
        return await http.patch(f"{CM}/c?{query}", content=b'{"data": {"k": "2"}}', headers=merge)
    if verb == "DELETE":
        return await http.delete(f"{CM}/c?{query}")
    return await http.delete(f"{CM}?{query}")  # deletecollection


VERBS = [("POST", "CreateOptions"), ("PUT", "UpdateOptions"), ("PATCH", "PatchOptions"),
         ("DELETE", "DeleteOptions"), ("DELETECOLLECTION", "DeleteOptions")]


async def _unchanged(http: httpx2.AsyncClient) -> None:
    resp = await http.get(f"{CM}/c")
    assert resp.status_code == 200 and resp.json()["data"] == {"k": "1"}
    assert (await http.get(f"{CM}/new")).status_code == 404


@pytest.mark.parametrize(("verb", "kind"), VERBS)
async def test_a_bogus_value_beside_all_is_refused_with_every_value_listed(
        http: httpx2.AsyncClient, verb: str, kind: str) -> None:
    await _configmap(http)
    resp = await _write(http, verb, "dryRun=All&dryRun=Bogus")
    assert resp.status_code == 422, resp.text
    status = resp.json()
    assert status["message"] == _unsupported(kind, '[]string{"All", "Bogus"}')
    assert status["details"] == {"group": "meta.k8s.io", "kind": kind, "causes": [
        {"reason": "FieldValueNotSupported", "field": "dryRun",
         "message": 'Unsupported value: []string{"All", "Bogus"}: supported values: "All"'}]}
    await _unchanged(http)


@pytest.mark.parametrize(("verb", "kind"), VERBS)
async def test_an_empty_value_is_refused_not_taken_as_no_dry_run(http: httpx2.AsyncClient, verb: str,
                                                                 kind: str) -> None:
    await _configmap(http)
    resp = await _write(http, verb, "dryRun=")
    assert resp.status_code == 422, resp.text
    assert resp.json()["message"] == _unsupported(kind, '[]string{""}')
    await _unchanged(http)


@pytest.mark.parametrize(("verb", "kind"), VERBS)
async def test_all_given_twice_is_a_dry_run(http: httpx2.AsyncClient, verb: str, kind: str) -> None:
    await _configmap(http)
    resp = await _write(http, verb, "dryRun=All&dryRun=All")
    assert resp.status_code in (200, 201), resp.text
    await _unchanged(http)


async def test_a_delete_body_with_a_bogus_value_is_refused(http: httpx2.AsyncClient) -> None:
    await _configmap(http)
    resp = await http.request("DELETE", f"{CM}/c", json={"dryRun": ["All", "Bogus"]})
    assert resp.status_code == 422
    assert resp.json()["message"] == _unsupported("DeleteOptions", '[]string{"All", "Bogus"}')
    resp = await http.request("DELETE", f"{CM}/c", json={"dryRun": ["All", "All"]})
    assert resp.status_code == 200, resp.text
    await _unchanged(http)


@pytest.mark.parametrize("verb", ["DELETE", "DELETECOLLECTION"])
async def test_a_delete_with_a_body_does_not_read_its_query_options(http: httpx2.AsyncClient, verb: str) -> None:
    """kube-apiserver's DeleteResource and DeleteCollection decode the query's options only when
    the body is empty: with a DeleteOptions body, ``?dryRun=All`` is no dry run and a bogus query
    value is no error (what the official client sends for ``delete_*(body=V1DeleteOptions(),
    dry_run="All")``)."""
    await _configmap(http)
    url = f"{CM}/c" if verb == "DELETE" else CM
    resp = await http.request("DELETE", f"{url}?dryRun=Bogus&gracePeriodSeconds=x", json={"kind": "DeleteOptions"})
    assert resp.status_code == 200, resp.text
    assert (await http.get(f"{CM}/c")).status_code == 404
    await _configmap(http)
    resp = await http.request("DELETE", f"{url}?dryRun=All", json={"kind": "DeleteOptions", "apiVersion": "v1"})
    assert resp.status_code == 200, resp.text
    assert (await http.get(f"{CM}/c")).status_code == 404
