"""A requested resourceVersion read as kube-apiserver's storage reads it (strconv.ParseUint, "" and
"0" meaning none), with its texts: a list's ``invalid resource version: <field error>`` (storage
ValidateListOptions), a get's or watch's field error (upstream: 500, pumice: 400), an update's Go
error (upstream: 500, pumice: 400). Before, Python's int() took ``+5``, `` 5`` and other scripts'
digits, and a bad update precondition was a 409 Conflict."""

from __future__ import annotations

import httpx2
import pytest

CMS = "/api/v1/namespaces/default/configmaps"


def _field_error(rv: str) -> str:
    return f'resourceVersion: Invalid value: "{rv}": strconv.ParseUint: parsing "{rv}": invalid syntax'


@pytest.mark.parametrize("rv", ["abc", "+1", "-1", "1_0"])
async def test_a_list_or_delete_collection_refuses_a_version_parseuint_refuses(http: httpx2.AsyncClient,
                                                                               rv: str) -> None:
    for method in ("GET", "DELETE"):
        r = await http.request(method, CMS, params={"resourceVersion": rv})
        assert r.status_code == 400, r.text
        assert r.json()["message"] == f"invalid resource version: {_field_error(rv)}"


async def test_a_version_out_of_uint64_is_out_of_range(http: httpx2.AsyncClient) -> None:
    rv = "18446744073709551616"
    r = await http.get(CMS, params={"resourceVersion": rv})
    assert r.json()["message"] == (f'invalid resource version: resourceVersion: Invalid value: "{rv}": '
                                   f'strconv.ParseUint: parsing "{rv}": value out of range')


async def test_a_get_and_a_watch_answer_the_field_error_alone(http: httpx2.AsyncClient) -> None:
    assert (await http.post(CMS, json={"metadata": {"name": "one"}})).status_code == 201
    for url, params in ((f"{CMS}/one", {"resourceVersion": "abc"}),
                        (CMS, {"watch": "1", "resourceVersion": "abc"})):
        r = await http.get(url, params=params)
        assert r.status_code == 400, r.text
        assert r.json()["message"] == _field_error("abc")


async def test_a_version_newer_than_the_store_is_a_timeout_with_its_prefix(http: httpx2.AsyncClient) -> None:
    assert (await http.post(CMS, json={"metadata": {"name": "one"}})).status_code == 201
    r = await http.get(f"{CMS}/one", params={"resourceVersion": "99999999"})
    assert r.status_code == 504, r.text
    assert r.json()["message"].startswith("Timeout: Too large resource version: 99999999, current: ")


async def test_an_update_with_an_unreadable_version_is_refused_with_gos_text(http: httpx2.AsyncClient) -> None:
    assert (await http.post(CMS, json={"metadata": {"name": "one"}})).status_code == 201
    r = await http.put(f"{CMS}/one", json={"metadata": {"name": "one", "resourceVersion": "abc"}})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == 'strconv.ParseUint: parsing "abc": invalid syntax'
    r = await http.patch(f"{CMS}/one", json={"metadata": {"resourceVersion": "abc"}},
                         headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 400, r.text


async def test_an_update_precondition_compares_versions_as_numbers(http: httpx2.AsyncClient) -> None:
    created = (await http.post(CMS, json={"metadata": {"name": "one"}})).json()
    rv = created["metadata"]["resourceVersion"]
    r = await http.put(f"{CMS}/one", json={"metadata": {"name": "one", "resourceVersion": "00" + rv},
                                           "data": {"k": "v"}})
    assert r.status_code == 200, r.text
    r = await http.put(f"{CMS}/one", json={"metadata": {"name": "one", "resourceVersion": rv}})
    assert r.status_code == 409, r.text


async def test_a_create_ignores_a_version_the_storage_cannot_read(http: httpx2.AsyncClient) -> None:
    """etcd3 store.Create refuses only a version it reads as non-zero; Arabic-Indic five is not one."""
    r = await http.post(CMS, json={"metadata": {"name": "a", "resourceVersion": "\u0665"}})
    assert r.status_code == 201, r.text
    r = await http.post(CMS, json={"metadata": {"name": "b", "resourceVersion": "5"}})
    assert r.status_code == 400, r.text
