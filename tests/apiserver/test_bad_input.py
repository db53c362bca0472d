"""Bad input gets the right Status and changes nothing stored."""

from __future__ import annotations

import pytest

from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster

from .builders import configmap, pod


async def revision(c: LocalCluster) -> int:
    return c.server.store.revision


async def test_malformed_apply_yaml_is_400(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    before = await revision(cluster)
    with pytest.raises(ApiError) as e:
        await cluster.client.request("PATCH", cms.path("default", "x"), body=b"a: [unclosed",
                                     content_type="application/apply-patch+yaml", params={"fieldManager": "t"})
    assert e.value.code == 400 and e.value.reason == "BadRequest"
    assert await revision(cluster) == before


async def test_unknown_content_type_for_patch_is_415(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    await cluster.client.create(configmap("a"))
    with pytest.raises(ApiError) as e:
        await cluster.client.request("PATCH", cms.path("default", "a"), body=b"{}", content_type="text/plain")
    assert e.value.code == 415
    # installer.go's PATCH route Consumes its supportedTypes, so go-restful refuses any other type
    # with its own text (the real kube-apiserver's answer, differential run of session 14)
    assert e.value.message == "415: Unsupported Media Type"


_UNNAMED = "the name of the object (a based on URL) was undeterminable: name must be provided"
_RENAMED = "the name of the object (b) does not match the name on the URL (a)"


@pytest.mark.parametrize(("ops", "message"), [
    ([{"op": "remove", "path": "/metadata/name"}], _UNNAMED),
    ([{"op": "replace", "path": "", "value": {}}], _UNNAMED),
    ([{"op": "replace", "path": "/metadata/name", "value": "b"}], _RENAMED),
])
async def test_a_patch_that_unnames_or_renames_is_400_name_mismatch(cluster: LocalCluster, ops: list, message: str) -> None:
    # trial 11 F-11 a: patch.go applyPatch -> checkName (it was a silent no-op)
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    await cluster.client.create(configmap("a"))
    before = await revision(cluster)
    with pytest.raises(ApiError) as e:
        await cluster.client.patch(cms, "a", ops, "default", patch_type="json")
    assert (e.value.code, e.value.reason) == (400, "BadRequest")
    assert e.value.message == message
    assert await revision(cluster) == before


async def test_bad_json_patch_changes_nothing(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    cm = await cluster.client.create(configmap("a", data={"k": "v"}))
    with pytest.raises(ApiError) as e:
        await cluster.client.patch(cms, "a", [{"op": "replace", "path": "/data/missing", "value": 1}], "default",
                                   patch_type="json")
    assert e.value.code == 422
    got = await cluster.client.get(cms, "a", "default")
    assert got["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]


async def test_body_name_must_match_url(cluster: LocalCluster) -> None:
    cm = await cluster.client.create(configmap("a"))
    cm["metadata"]["name"] = "b"
    with pytest.raises(ApiError) as e:
        await cluster.client.request("PUT", "/api/v1/namespaces/default/configmaps/a", body=cm)
    assert e.value.code == 400 and "does not match the name on the URL" in e.value.message


async def test_namespace_in_body_must_match_url(cluster: LocalCluster) -> None:
    body = configmap("a", ns="kube-system")
    with pytest.raises(ApiError) as e:
        await cluster.client.request("POST", "/api/v1/namespaces/default/configmaps", body=body)
    assert e.value.code == 400


async def test_invalid_pod_spec_is_422(cluster: LocalCluster) -> None:
    p = pod("p")
    p["spec"]["containers"] = []
    before = await revision(cluster)
    with pytest.raises(ApiError) as e:
        await cluster.client.create(p)
    assert e.value.code == 422 and e.value.reason == "Invalid"
    assert await revision(cluster) == before


async def test_unknown_resource_path_is_404_status(cluster: LocalCluster) -> None:
    with pytest.raises(ApiError) as e:
        await cluster.client.request("GET", "/apis/apps/v1/things")
    assert e.value.code == 404 and e.value.status["kind"] == "Status"


async def test_a_path_of_a_group_no_api_serves_is_the_muxs_text_404(cluster: LocalCluster) -> None:
    """kube-apiserver's mux answers Go's http.NotFound text there, not a Status."""
    for path in ("/apis/nope.example.com/v1/things", "/apis/nope.example.com", "/apis/nope.example.com/v1"):
        with pytest.raises(ApiError) as e:
            await cluster.client.request("GET", path)
        assert (e.value.code, e.value.message, e.value.status) == (404, "404 page not found", {}), path


async def test_bad_label_selector_is_400(cluster: LocalCluster) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    with pytest.raises(ApiError) as e:
        await cluster.client.list(pods, "default", label_selector="a in (b")
    assert e.value.code == 400


async def test_invalid_dry_run_value_is_an_invalid_create_options(cluster: LocalCluster) -> None:
    # kube-apiserver answers 422 (ValidateCreateOptions), not 400: the differential run of session 14
    with pytest.raises(ApiError) as e:
        await cluster.client.request("POST", "/api/v1/namespaces/default/configmaps", body=configmap("a"),
                                     params={"dryRun": "Some"})
    assert e.value.code == 422 and e.value.reason == "Invalid"


async def test_unknown_pod_field_under_strict_is_400(cluster: LocalCluster) -> None:
    p = pod("p")
    p["spec"]["containers"][0]["bogus"] = 1
    with pytest.raises(ApiError) as e:
        await cluster.client.request("POST", "/api/v1/namespaces/default/pods", body=p,
                                     params={"fieldValidation": "Strict"})
    assert e.value.code == 400
    assert e.value.message == ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                               'unknown field "spec.containers[0].bogus"')


async def test_unknown_fields_are_dropped_without_strict(cluster: LocalCluster) -> None:
    p = pod("p")
    p["spec"]["bogus"] = 1
    p["metadata"]["nonsense"] = "x"
    created = await cluster.client.create(p)
    assert "bogus" not in created["spec"] and "nonsense" not in created["metadata"]


@pytest.mark.parametrize("ops", [
    [{"op": "add"}],  # trial 11 F-11 b: the text was Python's repr of the operation
    [{"op": "remove", "path": "/data/nosuch"}],
    [{"op": "test", "path": "/data/k", "value": "other"}],
    [{"op": "bogus", "path": "/data/k"}],
])
async def test_a_json_patch_that_does_not_apply_is_upstreams_generic_422(cluster: LocalCluster, ops: list) -> None:
    # applyJSPatch: NewGenericServerResponse(422, ...): the generic text, empty details, no reason sent
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    await cluster.client.create(configmap("a", data={"k": "v"}))
    before = await revision(cluster)
    with pytest.raises(ApiError) as e:
        await cluster.client.patch(cms, "a", ops, "default", patch_type="json")
    assert e.value.status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": "the server rejected our request due to an error in our request",
                              "reason": "Invalid", "details": {}, "code": 422}
    assert await revision(cluster) == before


@pytest.mark.parametrize(("body", "message"), [
    # under fieldValidation Warn (the default) or Strict, kube-apiserver decodes the patch first
    (b'{"op": "add", "path": "/a", "value": 1}',
     "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"),
    (b'["x"]', "error decoding patch: json: cannot unmarshal string into Go value of type handlers.jsonPatchOp"),
    (b'[{"op": 1}]',
     "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"),
    (b'[{"op": "add"', "error decoding patch: unexpected end of JSON input"),
    # under Ignore, the patch library's own decoding
    (b'{"op": "add", "path": "/a", "value": 1}?Ignore',
     "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
    (b'["x"]?Ignore', "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
])
async def test_a_json_patch_that_does_not_decode_is_400(cluster: LocalCluster, body: bytes, message: str) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    await cluster.client.create(configmap("a"))
    body, _, ignore = body.partition(b"?")
    with pytest.raises(ApiError) as e:
        await cluster.client.request("PATCH", cms.path("default", "a"), body=body,
                                     content_type="application/json-patch+json",
                                     params={"fieldValidation": "Ignore"} if ignore else None)
    assert (e.value.code, e.value.reason, e.value.message) == (400, "BadRequest", message)


async def test_a_json_patch_of_more_than_10000_operations_is_413(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    await cluster.client.create(configmap("a"))
    with pytest.raises(ApiError) as e:
        await cluster.client.patch(cms, "a", [{"op": "test", "path": "/kind", "value": "ConfigMap"}] * 10001,
                                   "default", patch_type="json")
    assert (e.value.code, e.value.message) == (413, "Request entity too large: The allowed maximum operations "
                                                     "in a JSON patch is 10000, got 10001")


async def test_a_lone_surrogate_escape_is_read_as_the_replacement_character(cluster: LocalCluster) -> None:
    # trial 11 F-11 d: Go's encoding/json turns a \u escape of a lone UTF-16 surrogate into U+FFFD
    # (msgspec refused the body: 400 "Input data was truncated"); a valid pair stays a pair
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    body = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},'
            b'"data":{"a":"x\\ud800y","b":"\\ud83d\\ude00","c":"\\\\ud800","d":"\\udc00"}}')
    await cluster.client.request("POST", cms.path("default"), body=body)
    got = await cluster.client.get(cms, "s", "default")
    assert got["data"] == {"a": "x\ufffdy", "b": "\U0001f600", "c": "\\ud800", "d": "\ufffd"}
    with pytest.raises(ApiError) as e:  # a body that is bad for another reason keeps its own error
        await cluster.client.request("POST", cms.path("default"), body=b'{"a":"\\ud800" x}')
    assert (e.value.code, e.value.message) == (
        400, "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse "
             """error: invalid character 'x' after object key:value pair ({"a":"\\ud800" x})""")


async def test_a_strategic_patch_against_its_set_element_order_is_400_with_upstreams_text(cluster: LocalCluster) -> None:
    # trial 11 F-11 f: strategicpatch's plain Go error, upstream's text; upstream answers it with
    # 500 (unclassified), pumice with 400 BadRequest (bad input never gets a 500: errors.merge_error)
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    await cluster.client.create(pod("p"))
    before = await revision(cluster)
    patch = {"spec": {"$setElementOrder/containers": [{"name": "z"}], "containers": [{"name": "c", "image": "x"}]}}
    with pytest.raises(ApiError) as e:
        await cluster.client.patch(pods, "p", patch, "default", patch_type="strategic")
    assert e.value.status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": "The order in patch list:\n[map[image:x name:c]]\n doesn't match "
                                         "$setElementOrder list:\n[map[name:z]]\n", "reason": "BadRequest", "code": 400}
    assert await revision(cluster) == before


@pytest.mark.parametrize("metadata", [{}, {"namespace": "default"}, {"name": ""}])
async def test_a_put_whose_body_has_no_name_is_400_name_mismatch(cluster: LocalCluster, metadata: dict) -> None:
    # rest.go checkName: the body's name must be the URL's (an empty one was taken from the URL)
    cm = await cluster.client.create(configmap("a"))
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {**metadata, "resourceVersion":
                                                                    cm["metadata"]["resourceVersion"]}}
    with pytest.raises(ApiError) as e:
        await cluster.client.request("PUT", "/api/v1/namespaces/default/configmaps/a", body=body)
    assert (e.value.code, e.value.message) == (400, "the name of the object (a based on URL) was undeterminable: name must be provided")
