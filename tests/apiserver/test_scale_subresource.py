"""The scale subresource decodes its body as an autoscaling/v1 Scale and checks the name as
kube-apiserver's update and patch handlers do (trial 12 F-4): a Scale naming another object is
400, a wrongly typed ``spec.replicas`` is Go's decode error (never a Python repr), ``null`` in a
merge patch is Go's zero value 0, and a negative count is 422 with the Scale's details."""

from __future__ import annotations

import httpx2
import pytest

URL = "/apis/apps/v1/namespaces/default/deployments/dd"
MERGE = {"Content-Type": "application/merge-patch+json"}


def _deployment(name: str, replicas: int = 3) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


async def _replicas(http: httpx2.AsyncClient) -> int:
    return int((await http.get(URL)).json()["spec"]["replicas"])


@pytest.fixture
async def dd(http: httpx2.AsyncClient) -> httpx2.AsyncClient:
    r = await http.post("/apis/apps/v1/namespaces/default/deployments", json=_deployment("dd"))
    assert r.status_code == 201, r.text
    return http


def _scale(name: str, replicas: object) -> dict:
    return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": name},
            "spec": {"replicas": replicas}}


async def test_a_scale_put_naming_another_object_is_refused(dd: httpx2.AsyncClient) -> None:
    r = await dd.put(URL + "/scale", json=_scale("other", 2))
    assert r.status_code == 400, r.text
    assert r.json()["message"] == "the name of the object (other) does not match the name on the URL (dd)"
    assert r.json()["reason"] == "BadRequest"
    assert await _replicas(dd) == 3
    body = _scale("dd", 2)
    body["metadata"]["namespace"] = "kube-system"
    r = await dd.put(URL + "/scale", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == ("the namespace of the object (kube-system) does not match the namespace on the URL "
                                   "(default)")
    body = _scale("dd", 2)
    del body["metadata"]["name"]
    r = await dd.put(URL + "/scale", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == "the name of the object (dd based on URL) was undeterminable: name must be provided"
    r = await dd.put(URL + "/scale", json=_scale("dd", 2))
    assert r.status_code == 200, r.text
    assert await _replicas(dd) == 2


@pytest.mark.parametrize(("value", "shown"), [
    ("x", "string"), (True, "bool"), (1.5, "number 1.5"), (3000000000, "number 3000000000"), ({}, "object"),
])
async def test_a_wrongly_typed_scale_put_is_a_decode_error(dd: httpx2.AsyncClient, value: object, shown: str) -> None:
    r = await dd.put(URL + "/scale", json=_scale("dd", value))
    assert r.status_code == 400, r.text
    assert r.json()["message"] == (f'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
                                   f"{shown} into Go struct field ScaleSpec.spec.replicas of type int32")
    assert await _replicas(dd) == 3


async def test_a_wrongly_typed_scale_patch_is_the_patch_handlers_error(dd: httpx2.AsyncClient) -> None:
    for value, shown in (("x", "string"), (True, "bool"), (1.5, "number 1.5"), (3000000000, "number 3000000000")):
        r = await dd.patch(URL + "/scale", json={"spec": {"replicas": value}}, headers=MERGE)
        assert r.status_code == 422, r.text
        message = r.json()["message"]
        assert message.startswith(' "" is invalid: patch: Invalid value: "{'), message
        assert message.endswith(f"json: cannot unmarshal {shown} into Go struct field ScaleSpec.spec.replicas of "
                                "type int32"), message
        for python in ("'x'", "True", "None"):
            assert python not in message
    assert await _replicas(dd) == 3


async def test_null_replicas_in_a_merge_patch_scales_to_zero(dd: httpx2.AsyncClient) -> None:
    r = await dd.patch(URL + "/scale", json={"spec": {"replicas": None}}, headers=MERGE)
    assert r.status_code == 200, r.text
    assert r.json()["spec"] == {"replicas": 0}
    assert await _replicas(dd) == 0


async def test_a_negative_scale_is_invalid_with_the_scales_details(dd: httpx2.AsyncClient) -> None:
    for send in (dd.put(URL + "/scale", json=_scale("dd", -3)),
                 dd.patch(URL + "/scale", json={"spec": {"replicas": -3}}, headers=MERGE)):
        r = await send
        assert r.status_code == 422, r.text
        st = r.json()
        assert st["message"] == 'Scale.autoscaling "dd" is invalid: spec.replicas: Invalid value: -3: must be greater ' \
                                "than or equal to 0"
        assert st["details"] == {"name": "dd", "group": "autoscaling", "kind": "Scale", "causes": [
            {"reason": "FieldValueInvalid", "message": "Invalid value: -3: must be greater than or equal to 0",
             "field": "spec.replicas"}]}
    assert await _replicas(dd) == 3
