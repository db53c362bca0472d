"""CRD validation rules (x-kubernetes-validations, CEL): evaluated on create and update, transition
rules with oldSelf, ratcheting, messageExpression, reason/fieldPath, list-map correlation, and
rules that do not compile refused at CRD create (422)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pumice.apiserver.celrules import compile_rules
from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster

RULES_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Gadget", "plural": "gadgets"},
        "scope": "Namespaced",
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                     "statusReplicasPath": ".status.replicas"}},
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "x-kubernetes-validations": [
                            {"rule": "self.replicas <= 5", "message": "at most 5 replicas"},
                            {"rule": "!has(self.mode) || self.mode != 'off' || self.replicas == 0",
                             "messageExpression": "'mode off needs 0 replicas, not ' + string(self.replicas)"},
                            {"rule": "self.replicas >= oldSelf.replicas || has(self.allowShrink)",
                             "message": "replicas may not shrink", "reason": "FieldValueForbidden",
                             "fieldPath": ".replicas"},
                        ],
                        "properties": {
                            "replicas": {"type": "integer"},
                            "mode": {"type": "string"},
                            "allowShrink": {"type": "boolean"},
                            "owner": {"type": "string",
                                      "x-kubernetes-validations": [{"rule": "self == oldSelf",
                                                                    "message": "owner is immutable"}]},
                            "ports": {
                                "type": "array", "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name"],
                                "items": {"type": "object", "required": ["name"], "properties": {
                                    "name": {"type": "string"},
                                    "port": {"type": "integer",
                                             "x-kubernetes-validations": [
                                                 {"rule": "self == oldSelf", "message": "a port is immutable"}]},
                                }},
                            },
                            "labels": {"type": "object", "additionalProperties": {
                                "type": "string",
                                "x-kubernetes-validations": [{"rule": "self.size() <= 3"}]}},
                        },
                    },
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                },
            }},
        }],
    },
}


def gadget(name: str, **spec: object) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


@pytest.fixture
async def gadgets(cluster: LocalCluster):
    await cluster.client.create(copy.deepcopy(RULES_CRD))
    return cluster.scheme.by_api_version_kind("example.com/v1", "Gadget")


async def _refused(coro: Any) -> str:
    with pytest.raises(ApiError) as e:
        await coro
    assert e.value.code == 422 and e.value.reason == "Invalid", e.value
    return e.value.message


async def test_a_rule_refuses_create_with_its_message(cluster: LocalCluster, gadgets) -> None:
    msg = await _refused(cluster.client.create(gadget("g1", replicas=7)))
    assert msg == 'Gadget.example.com "g1" is invalid: spec: Invalid value: "object": at most 5 replicas'
    msg = await _refused(cluster.client.create(gadget("g1", replicas=2, mode="off")))
    assert msg == 'Gadget.example.com "g1" is invalid: spec: Invalid value: "object": mode off needs 0 replicas, not 2'
    msg = await _refused(cluster.client.create(gadget("g1", replicas=1, labels={"a": "long!"})))
    assert msg == 'Gadget.example.com "g1" is invalid: spec.labels[a]: Invalid value: "string": failed rule: ' \
                  'self.size() <= 3'
    assert await cluster.client.create(gadget("g1", replicas=5, mode="on"))


async def test_transition_rules_see_oldself_on_update_only(cluster: LocalCluster, gadgets) -> None:
    c = cluster.client
    await c.create(gadget("g2", replicas=3, owner="alice", ports=[{"name": "http", "port": 80}]))
    msg = await _refused(c.patch(gadgets, "g2", {"spec": {"replicas": 2}}, namespace="default"))
    assert msg == 'Gadget.example.com "g2" is invalid: spec.replicas: Forbidden: replicas may not shrink'
    assert await c.patch(gadgets, "g2", {"spec": {"replicas": 2, "allowShrink": True}}, namespace="default")
    msg = await _refused(c.patch(gadgets, "g2", {"spec": {"owner": "mallory"}}, namespace="default"))
    assert msg == 'Gadget.example.com "g2" is invalid: spec.owner: Invalid value: "string": owner is immutable'
    # list-type map items are correlated by key: the same port moved in the list is the same item
    ok = {"spec": {"ports": [{"name": "grpc", "port": 9000}, {"name": "http", "port": 80}]}}
    assert await c.patch(gadgets, "g2", ok, namespace="default")
    bad = {"spec": {"ports": [{"name": "grpc", "port": 9000}, {"name": "http", "port": 81}]}}
    msg = await _refused(c.patch(gadgets, "g2", bad, namespace="default"))
    assert msg == 'Gadget.example.com "g2" is invalid: spec.ports[1].port: Invalid value: "integer": a port is immutable'


async def test_unchanged_values_are_not_checked_again_ratcheting(cluster: LocalCluster, gadgets) -> None:
    """A value stored before a rule tightened (here: written under a CRD without the rule) may stay;
    status updates do not re-check the spec."""
    crd_kind = cluster.scheme.by_api_version_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    c = cluster.client
    loose = await c.get(crd_kind, "gadgets.example.com")
    tight = copy.deepcopy(loose)
    del loose["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"]
    await c.update(loose)
    await c.create(gadget("g3", replicas=9))
    tight["metadata"].pop("resourceVersion", None)
    current = await c.get(crd_kind, "gadgets.example.com")
    tight["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    await c.update(tight)
    got = await c.get(gadgets, "g3", "default")
    got["status"] = {"replicas": 9}
    assert (await c.update_status(got))["status"] == {"replicas": 9}
    assert await c.patch(gadgets, "g3", {"metadata": {"labels": {"x": "y"}}}, namespace="default")
    msg = await _refused(c.patch(gadgets, "g3", {"spec": {"replicas": 10}}, namespace="default"))
    assert "at most 5 replicas" in msg


async def test_a_rule_that_does_not_compile_refuses_the_crd(cluster: LocalCluster) -> None:
    crd = copy.deepcopy(RULES_CRD)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"] = [{"rule": "self.replicas <<< 5"}, {"rule": "true", "reason": "Nope"}]
    msg = await _refused(cluster.client.create(crd))
    prefix = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    assert f'{prefix}[0].rule: Invalid value: "self.replicas <<< 5": compilation failed: ' in msg
    assert "Syntax error" in msg
    assert f'{prefix}[1].reason: Unsupported value: "Nope"' in msg


def test_schemas_without_rules_compile_to_nothing() -> None:
    schema = copy.deepcopy(RULES_CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert compile_rules(schema) is not None
    del schema["properties"]["spec"]
    assert compile_rules(schema) is None


async def test_a_pattern_that_is_not_a_regular_expression_refuses_the_crd(cluster: LocalCluster) -> None:
    crd = copy.deepcopy(RULES_CRD)
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    props["mode"]["pattern"] = "(["
    msg = await _refused(cluster.client.create(crd))
    assert ('spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[mode].pattern: Invalid value: "([": '
            "must be a valid regular expression, but isn't: error parsing regexp: ") in msg
    props["mode"]["pattern"] = r"^\p{L}+$"  # RE2 syntax Python's re lacks: let through
    assert await cluster.client.create(crd)


async def test_the_scale_subresource_is_held_to_the_rules(cluster: LocalCluster, gadgets) -> None:
    """kubectl scale writes through .../scale: the object's rules still hold (trial-7's 'kubectl scale widget')."""
    await cluster.client.create(gadget("g4", replicas=1))
    with pytest.raises(ApiError) as e:
        await cluster.client.request("PATCH", "/apis/example.com/v1/namespaces/default/gadgets/g4/scale",
                                     body={"spec": {"replicas": 9}}, content_type="application/merge-patch+json")
    assert e.value.code == 422 and "at most 5 replicas" in e.value.message
    await cluster.client.request("PATCH", "/apis/example.com/v1/namespaces/default/gadgets/g4/scale",
                                 body={"spec": {"replicas": 4}}, content_type="application/merge-patch+json")
    assert (await cluster.client.get(gadgets, "g4", "default"))["spec"]["replicas"] == 4
