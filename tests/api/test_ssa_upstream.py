"""Server-side apply and the field ownership it records, step by step against what Kubernetes'
own field manager makes of the same steps: ``ssa_upstream_cases.json`` beside this file, written
by tools/ssa_oracle (k8s.io/apimachinery v0.34.1 pkg/util/managedfields over
structured-merge-diff v6.3.0, with kube-apiserver 1.34's OpenAPI). Built-in kinds' lists merge by
their OpenAPI list markers: container ports by containerPort and protocol (protocol defaulted to
TCP), Service ports by port and protocol, tolerations atomic, finalizers a set; atomic maps and
structs (nodeSelector, the Deployment selector, ownerReferences items) are one leaf.

Regenerate: ``cd tools/ssa_oracle && OPENAPI_DIR=<client-go>/openapi/openapitest/testdata go run .
< ../../tests/api/ssa_upstream_cases.json > /tmp/cases.json`` and move it back."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pumice.api.apply import ApplyConflict, SchemaListTypes, server_side_apply, update_managed_fields

CASES: list[dict[str, Any]] = json.loads((Path(__file__).parent / "ssa_upstream_cases.json").read_text())


#: what Go always serializes in a Deployment (its non-pointer structs, the PodSpec's
#: non-omitempty ``containers``): kube-apiserver's typed objects always hold them, so the real
#: kube-apiserver v1.34.4 records no ``".": {}`` on them where the oracle's unstructured objects
#: do (checked with kubectl create on both)
_GO_STRUCTS = (("f:spec",), ("f:spec", "f:template"), ("f:spec", "f:template", "f:metadata"),
               ("f:spec", "f:template", "f:spec"), ("f:spec", "f:strategy"),
               ("f:spec", "f:template", "f:spec", "f:containers"))


def _typed_roots(fv1: dict[str, Any]) -> dict[str, Any]:
    """``fv1`` without the ``".": {}`` the oracle records on :data:`_GO_STRUCTS`."""
    out = copy.deepcopy(fv1)
    for path in _GO_STRUCTS:
        node: Any = out
        for step in path:
            node = node.get(step) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(".", None)
    return out


def _run(case: dict[str, Any], live: dict[str, Any] | None, step: dict[str, Any]) -> dict[str, Any]:
    if step["op"] == "apply":
        return server_side_apply(live, step["object"], manager=step["manager"], kind=case["kind"],
                                 force=step.get("force", False), time="2026-01-01T00:00:00Z")
    new = copy.deepcopy(step["object"])
    update_managed_fields(live, new, manager=step["manager"], api_version=case["apiVersion"], kind=case["kind"],
                          builtin=True, time="2026-01-01T00:00:00Z")
    return new


@pytest.mark.parametrize("case", CASES, ids=[c["name"].split(":")[0] + f"-{i}" for i, c in enumerate(CASES)])
def test_every_step_ends_as_upstreams_field_manager_ends_it(case: dict[str, Any]) -> None:
    live: dict[str, Any] | None = None
    for i, step in enumerate(case["steps"]):
        want = step["upstream"]
        error = None
        try:
            live = _run(case, live, step)
        except (ApplyConflict, ValueError) as e:
            error = str(e)
        assert live is not None
        where = f"{case['name']}, step {i} ({step['op']} by {step['manager']})"
        if want["error"] is None:
            assert error is None, where
        else:  # upstream wraps the same message in its own context
            assert error is not None and error in want["error"], (where, error, want["error"])
        got_entries = [[e["manager"], e["operation"], e["fieldsV1"]] for e in live["metadata"].get("managedFields", [])]
        want_entries = [[m, op, _typed_roots(fv1)] for m, op, fv1 in want["managedFields"]]
        assert sorted(got_entries, key=json.dumps) == sorted(want_entries, key=json.dumps), where
        got_object = copy.deepcopy(live)
        got_object["metadata"].pop("managedFields", None)
        assert got_object == want["object"], where


def test_the_cases_cover_the_markers() -> None:
    text = json.dumps(CASES)
    for needle in ('k:{\\"containerPort\\":53,\\"protocol\\":\\"TCP\\"}', 'k:{\\"port\\":53,\\"protocol\\":\\"UDP\\"}',
                   '"f:tolerations": {}', '"f:nodeSelector": {}', '"f:selector": {}', 'v:\\"b/f\\"',
                   'k:{\\"uid\\":\\"u1\\"}": {}', "conflict with"):
        assert needle in text, needle


#: a custom resource's steps as the real kube-apiserver v1.34.4 ended them (kubectl apply
#: --server-side / replace against it): list-type map with a defaulted key, set, atomic list,
#: x-kubernetes-map-type atomic map and struct, granular map and struct
KUBE_CRD = json.loads((Path(__file__).parent / "ssa_kube_crd_case.json").read_text())


def _schema_defaults(obj: dict[str, Any]) -> None:
    """The CRD's one schema default (a port's ``protocol: TCP``), as the API server sets it."""
    for port in obj.get("spec", {}).get("ports", []):
        port.setdefault("protocol", "TCP")


def test_a_custom_resource_applied_and_updated_ends_as_kube_apiserver_ends_it() -> None:
    lists = SchemaListTypes(KUBE_CRD["crd"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    live: dict[str, Any] | None = None
    for i, step in enumerate(KUBE_CRD["steps"]):
        want = step["kube"]
        error = None
        obj = copy.deepcopy(step["object"])
        try:
            if step["op"] == "apply":
                live = server_side_apply(live, obj, manager=step["manager"], kind="Widget", force=step.get("force", False),
                                         builtin=False, time="2026-01-01T00:00:00Z", lists=lists)
            else:
                update_managed_fields(live, obj, manager=step["manager"], api_version="example.com/v1", kind="Widget",
                                      builtin=False, time="2026-01-01T00:00:00Z", lists=lists)
                live = obj
        except ApplyConflict as e:
            error = f"error: {e}"
        assert live is not None
        _schema_defaults(live)
        where = f"step {i} ({step['op']} by {step['manager']})"
        assert error == want["error"], where
        got = [[e["manager"], e["operation"], e["fieldsV1"]] for e in live["metadata"]["managedFields"]]
        assert sorted(got, key=json.dumps) == sorted(want["managedFields"], key=json.dumps), where
        assert live["spec"] == want["spec"], where
