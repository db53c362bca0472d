"""Generic ephemeral volumes and claim specs against kube-apiserver's texts
(pkg/apis/core/validation: validateEphemeralVolumeSource, ValidatePersistentVolumeClaimTemplate,
ValidateTemplateObjectMeta, ValidatePersistentVolumeClaimSpec, and the claim name check of
validateVolumeSource)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pumice.api import Obj
from pumice.api.scheme import POD
from pumice.api.validation import validate_object
from pumice.apiserver import defaults
from pumice.apiserver.kinds import _check_pvc

V0 = "spec.volumes[0]"
T0 = f"{V0}.ephemeral.volumeClaimTemplate"
SPEC: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


def pod(template: Any, *, name: str = "p", mount: bool = False) -> Obj:
    ctr: Obj = {"name": "c", "image": "x"}
    if mount:
        ctr["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"containers": [ctr], "volumes": [{"name": "scratch", "ephemeral": template}]}}
    defaults.pod(obj)
    return obj


def causes(obj: Obj) -> list[tuple[str, str, str]]:
    return [(c.field, c.reason, c.message) for c in validate_object(POD, obj, None)]


def both_sources() -> Obj:
    obj = pod({"volumeClaimTemplate": {"spec": SPEC}})
    obj["spec"]["volumes"][0]["emptyDir"] = {}
    return obj


def spec(**fields: Any) -> Obj:
    out = copy.deepcopy(SPEC)
    out.update(fields)
    return {k: v for k, v in out.items() if v is not None}


CASES = [
    ("no claim template", pod({}), [(T0, "FieldValueRequired", "Required value")]),
    ("template metadata beyond labels and annotations",
     pod({"volumeClaimTemplate": {"metadata": {"name": "mine", "namespace": "other", "labels": {"a": "b"}},
                                  "spec": SPEC}}),
     [(f"{T0}.metadata.name", "FieldValueForbidden", "Forbidden: cannot be set"),
      (f"{T0}.metadata.namespace", "FieldValueForbidden", "Forbidden: cannot be set")]),
    ("template uid and a zero grace period",  # validateFieldAllowList: Go's field name, a non-nil pointer
     pod({"volumeClaimTemplate": {"metadata": {"uid": "u1", "deletionGracePeriodSeconds": 0, "generation": 0},
                                  "spec": SPEC}}),
     [(f"{T0}.metadata.uID", "FieldValueForbidden", "Forbidden: cannot be set"),
      (f"{T0}.metadata.deletionGracePeriodSeconds", "FieldValueForbidden", "Forbidden: cannot be set")]),
    ("template label key", pod({"volumeClaimTemplate": {"metadata": {"labels": {"a b": "x"}}, "spec": SPEC}}),
     [(f"{T0}.metadata.labels", "FieldValueInvalid",
       'Invalid value: "a b": name part must consist of alphanumeric characters, \'-\', \'_\' or \'.\', and must '
       "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
       "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")]),
    ("template spec without access modes or storage", pod({"volumeClaimTemplate": {"spec": {}}}),
     [(f"{T0}.spec.accessModes", "FieldValueRequired", "Required value: at least 1 access mode is required"),
      (f"{T0}.spec.resources[storage]", "FieldValueRequired", "Required value")]),
    ("unknown access mode", pod({"volumeClaimTemplate": {"spec": spec(accessModes=["RWO"])}}),
     [(f"{T0}.spec.accessModes", "FieldValueNotSupported", 'Unsupported value: "RWO": supported values: '
       '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"')]),
    ("ReadWriteOncePod with another mode",
     pod({"volumeClaimTemplate": {"spec": spec(accessModes=["ReadWriteOncePod", "ReadOnlyMany"])}}),
     [(f"{T0}.spec.accessModes", "FieldValueForbidden",
       "Forbidden: may not use ReadWriteOncePod with other access modes")]),
    ("zero storage", pod({"volumeClaimTemplate": {"spec": spec(resources={"requests": {"storage": "0"}})}}),
     [(f"{T0}.spec.resources[storage]", "FieldValueInvalid", 'Invalid value: "0": must be greater than zero')]),
    ("bad class and volume mode",
     pod({"volumeClaimTemplate": {"spec": spec(storageClassName="Fast", volumeMode="Raw")}}),
     [(f"{T0}.spec.storageClassName", "FieldValueInvalid",
       'Invalid value: "Fast": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '
       "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
       "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
      (f"{T0}.spec.volumeMode", "FieldValueNotSupported",
       'Unsupported value: "Raw": supported values: "Block", "Filesystem"')]),
    # the claim <pod>-<volume> must be a valid name; the volume is then not one a container may mount
    ("claim name too long", pod({"volumeClaimTemplate": {"spec": SPEC}}, name="p" * 250, mount=True),
     [(f"{V0}.name", "FieldValueInvalid",
       f'Invalid value: "scratch": PVC name "{"p" * 250}-scratch": must be no more than 253 characters'),
      ("spec.containers[0].volumeMounts[0].name", "FieldValueNotFound", 'Not found: "scratch"')]),
    ("ephemeral beside another source", both_sources(),
     [(f"{V0}.ephemeral", "FieldValueForbidden", "Forbidden: may not specify more than 1 volume type")]),
]


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_ephemeral_volume_rule_has_upstreams_cause(obj: Obj, want: list[tuple[str, str, str]]) -> None:
    assert causes(obj) == want


def test_a_valid_ephemeral_volume_passes_in_a_pod_and_in_a_template() -> None:
    template = {"volumeClaimTemplate": {"metadata": {"labels": {"type": "scratch"},
                                                     "annotations": {"example.com/n": "1"}},
                                        "spec": spec(storageClassName="standard", volumeMode="Filesystem")}}
    assert causes(pod(template, mount=True)) == []
    # a template names no Pod: the claim name is not checked there
    from pumice.api.validation import validate_pod_spec
    assert validate_pod_spec(pod(template, name="p" * 250, mount=True)["spec"], "spec.template.spec") == []


def test_a_claim_gets_the_same_spec_rules() -> None:
    assert [(c.field, c.message) for c in _check_pvc({"resources": {"requests": {"storage": "-1Gi"}}}, None)] == [
        ("spec.accessModes", "Required value: at least 1 access mode is required"),
        ("spec.resources[storage]", 'Invalid value: "-1Gi": must be greater than zero')]
    assert _check_pvc(copy.deepcopy(SPEC), None) == []
