"""A built-in kind's body whose value has a JSON type its Go struct cannot hold is kube-apiserver's
decode error (trial 12 F-1, F-6 b): 400 ``<Kind> in version "<v>" cannot be handled as a <Kind>:
json: cannot unmarshal <json type> into Go struct field <Struct>.<json path> of type <Go type>``;
a merge patch whose result cannot be decoded is the patch handler's 422; custom resources keep
the structural schema's 422."""

from __future__ import annotations

import httpx2
import pytest

from pumice.api import protobuf
from pumice.api.godecode import unmarshal_error

MERGE = {"Content-Type": "application/merge-patch+json"}
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def _deployment(name: str, replicas: object = 1) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


@pytest.mark.parametrize(("api_version", "kind", "obj", "why"), [
    ("apps/v1", "Deployment", {"spec": {"replicas": "3"}},
     "string into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ("apps/v1", "Deployment", {"spec": {"template": {"spec": {"containers": [{"env": [{"name": "A", "value": 5}]}]}}}},
     "number into Go struct field EnvVar.spec.template.spec.containers.env.value of type string"),
    ("v1", "ConfigMap", {"data": {"a": 1}}, "number into Go struct field ConfigMap.data of type string"),
    ("v1", "ConfigMap", {"metadata": {"uid": 5}}, "number into Go struct field ObjectMeta.metadata.uid of type types.UID"),
    ("v1", "Pod", {"spec": {"volumes": [{"name": "v", "hostPath": "x"}]}},  # inline VolumeSource: Volume's field
     "string into Go struct field Volume.spec.volumes.hostPath of type v1.HostPathVolumeSource"),
    ("v1", "Pod", {"spec": {"containers": [{"resources": {"limits": []}}]}},
     "array into Go struct field ResourceRequirements.spec.containers.resources.limits of type v1.ResourceList"),
    ("v1", "Secret", {"data": {"a": 1}}, "number into Go struct field Secret.data of type []uint8"),
    ("v1", "Pod", {"spec": {"terminationGracePeriodSeconds": -(2**63) - 1}},
     f"number {-(2**63) - 1} into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64"),
])
def test_go_decode_error_texts(api_version: str, kind: str, obj: dict, why: str) -> None:
    assert unmarshal_error(protobuf.message_for(api_version, kind), obj) == "json: cannot unmarshal " + why


def test_null_and_the_first_error_in_document_order() -> None:
    message = protobuf.message_for("apps/v1", "Deployment")
    assert unmarshal_error(message, {"spec": {"replicas": None, "paused": None}, "metadata": {"labels": None}}) is None
    assert unmarshal_error(message, {"spec": {"paused": 1, "replicas": "x"}}) == (
        "json: cannot unmarshal number into Go struct field DeploymentSpec.spec.paused of type bool")


async def test_a_wrongly_typed_deployment_is_400_not_422(http: httpx2.AsyncClient) -> None:
    r = await http.post(DEPLOYMENTS, json=_deployment("dx", "3"))
    assert r.status_code == 400, r.text
    assert r.json()["reason"] == "BadRequest"
    assert r.json()["message"] == ('Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
                                   "unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32")
    assert (await http.get(DEPLOYMENTS + "/dx")).status_code == 404


async def test_a_wrongly_typed_configmap_value_is_400(http: httpx2.AsyncClient) -> None:
    r = await http.post("/api/v1/namespaces/default/configmaps",
                        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x1"}, "data": {"a": 1}})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot '
                                   "unmarshal number into Go struct field ConfigMap.data of type string")


async def test_a_merge_patch_to_a_wrong_type_is_the_patch_handlers_422(http: httpx2.AsyncClient) -> None:
    assert (await http.post(DEPLOYMENTS, json=_deployment("dp"))).status_code == 201
    r = await http.patch(DEPLOYMENTS + "/dp", json={"spec": {"replicas": "3"}}, headers=MERGE)
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert message.startswith(' "" is invalid: patch: Invalid value: "{'), message
    assert message.endswith("json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of "
                            "type int32"), message
    assert r.json()["details"]["causes"][0]["field"] == "patch"
    assert (await http.get(DEPLOYMENTS + "/dp")).json()["spec"]["replicas"] == 1


async def test_an_eviction_with_wrongly_typed_delete_options_is_a_decode_error(http: httpx2.AsyncClient) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pe"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    assert (await http.post("/api/v1/namespaces/default/pods", json=pod)).status_code == 201
    r = await http.post("/api/v1/namespaces/default/pods/pe/eviction", json={
        "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "pe"},
        "deleteOptions": {"gracePeriodSeconds": "x"}})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == ('Eviction in version "v1" cannot be handled as a Eviction: json: cannot unmarshal '
                                   "string into Go struct field DeleteOptions.deleteOptions.gracePeriodSeconds of "
                                   "type int64")
    assert (await http.get("/api/v1/namespaces/default/pods/pe")).status_code == 200


async def test_a_non_string_annotation_or_label_is_a_decode_error_not_stored(http: httpx2.AsyncClient) -> None:
    for part in ("annotations", "labels"):
        r = await http.post("/api/v1/namespaces/default/configmaps", json={
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "an", part: {"a": True}}})
        assert r.status_code == 400, r.text
        assert r.json()["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot '
                                       f"unmarshal bool into Go struct field ObjectMeta.metadata.{part} of type string")
    assert (await http.get("/api/v1/namespaces/default/configmaps/an")).status_code == 404


CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(("body", "message"), [
    ({"preconditions": "x"},
     "json: cannot unmarshal string into Go struct field DeleteOptions.preconditions of type v1.Preconditions"),
    ({"orphanDependents": "yes"},
     "json: cannot unmarshal string into Go struct field DeleteOptions.orphanDependents of type bool"),
    ({"gracePeriodSeconds": "5"},
     "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"),
    ({"gracePeriodSeconds": 1.5},
     "json: cannot unmarshal number 1.5 into Go struct field DeleteOptions.gracePeriodSeconds of type int64"),
    ({"dryRun": "All"}, "json: cannot unmarshal string into Go struct field DeleteOptions.dryRun of type []string"),
    ({"preconditions": {"uid": 5}},
     "json: cannot unmarshal number into Go struct field Preconditions.preconditions.uid of type types.UID"),
    ({"apiVersion": "v1", "kind": "Pod"}, 'no kind "Pod" is registered for version "v1" in scheme '
     '"k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:27"'),
    ({"apiVersion": "meta.k8s.io/v1", "kind": "GetOptions"},
     "converting (v1.GetOptions) to (v1.DeleteOptions): unknown conversion"),
    ({"apiVersion": 5, "kind": "DeleteOptions"}, "couldn't get version/kind; json parse error: json: cannot "
     "unmarshal number into Go struct field .apiVersion of type string"),
])
async def test_a_delete_options_body_that_does_not_decode_is_400_and_deletes_nothing(
        http: httpx2.AsyncClient, body: dict, message: str) -> None:
    """trial 17 F-4: DeleteOptions are decoded into the Go struct first (handlers/delete.go), for a
    DELETE and a deletecollection alike."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dd", "labels": {"f4": "y"}}}
    assert (await http.post(CONFIGMAPS, json=cm)).status_code == 201
    for url in (CONFIGMAPS + "/dd", CONFIGMAPS + "?labelSelector=f4"):
        r = await http.request("DELETE", url, json=body)
        assert r.status_code == 400, r.text
        assert (r.json()["reason"], r.json()["message"]) == ("BadRequest", message)
        assert (await http.get(CONFIGMAPS + "/dd")).status_code == 200


@pytest.mark.parametrize("api_version", [None, "v1", "apps/v1", "meta.k8s.io/v1", "v9"])
async def test_delete_options_of_any_api_version_are_decoded(http: httpx2.AsyncClient, api_version: str | None) -> None:
    """The meta scheme registers DeleteOptions unversioned: every apiVersion is the same kind."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dv"}}
    assert (await http.post(CONFIGMAPS, json=cm)).status_code == 201
    body = {"kind": "DeleteOptions", "gracePeriodSeconds": 0, "preconditions": {"uid": None}}
    if api_version is not None:
        body["apiVersion"] = api_version
    r = await http.request("DELETE", CONFIGMAPS + "/dv", json=body)
    assert r.status_code == 200, r.text
    assert (await http.get(CONFIGMAPS + "/dv")).status_code == 404
