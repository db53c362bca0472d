from __future__ import annotations

import copy

import pytest

from pumice.api.scheme import Scheme
from pumice.api.validation import DNS1123_SUBDOMAIN_ERR, validate_object

SCHEME = Scheme.builtin()
POD = SCHEME.by_api_version_kind("v1", "Pod")
NS = SCHEME.by_api_version_kind("v1", "Namespace")
SVC = SCHEME.by_api_version_kind("v1", "Service")
DEPLOY = SCHEME.by_api_version_kind("apps/v1", "Deployment")
JOB = SCHEME.by_api_version_kind("batch/v1", "Job")
PC = SCHEME.by_api_version_kind("scheduling.k8s.io/v1", "PriorityClass")


def pod(name="p1", **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def fields(causes):
    return [(c.field, c.reason) for c in causes]


def test_a_valid_pod_has_no_causes():
    assert validate_object(POD, pod(), None) == []


def test_name_must_be_a_dns_subdomain_with_the_upstream_message():
    [cause] = validate_object(POD, pod("Bad_Name"), None)
    assert cause.field == "metadata.name"
    assert cause.message == f'Invalid value: "Bad_Name": {DNS1123_SUBDOMAIN_ERR}'
    assert "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'" in cause.message


def test_name_or_generate_name_is_required():
    obj = pod()
    del obj["metadata"]["name"]
    [cause] = validate_object(POD, obj, None)
    assert (cause.field, cause.message) == ("metadata.name", "Required value: name or generateName is required")
    obj["metadata"]["generateName"] = "web-"
    assert validate_object(POD, obj, None) == []


def test_generate_name_is_checked_as_a_prefix_beside_the_generated_name():
    """trial 19 F-3: the registry validates after it generated the name, so the prefix was never
    checked. Mirrors ValidateObjectMetaAccessor: generateName (trailing dash masked) first."""
    obj = pod("g" * 58 + "q2nb5")
    obj["metadata"]["generateName"] = "g" * 300
    [cause] = validate_object(POD, obj, None)
    assert (cause.field, cause.message) == ("metadata.generateName",
                                            f'Invalid value: "{"g" * 300}": must be no more than 253 characters')
    obj = pod("Bad_Prefix-xf68r")
    obj["metadata"]["generateName"] = "Bad_Prefix-"
    causes = validate_object(POD, obj, None)
    assert [(c.field, c.message) for c in causes] == [
        ("metadata.generateName", f'Invalid value: "Bad_Prefix-": {DNS1123_SUBDOMAIN_ERR}'),
        ("metadata.name", f'Invalid value: "Bad_Prefix-xf68r": {DNS1123_SUBDOMAIN_ERR}'),
    ]


def test_a_generate_name_prefix_may_end_with_a_dash_but_not_be_one():
    for prefix, ok in (("web-", True), ("web", True), ("a-", True), ("-", False), ("web--", True), ("-web-", False)):
        obj = pod("webxyz12")
        obj["metadata"]["generateName"] = prefix
        assert (validate_object(POD, obj, None) == []) is ok, prefix


def test_a_generate_name_is_not_checked_on_a_pod_update():
    """Review 20 V-6: kube-apiserver checks generateName in ValidateObjectMetaAccessor (create),
    not in ValidateObjectMetaAccessorUpdate, which a Pod's (and a custom resource's) update runs."""
    old = pod("bad-x")
    old["metadata"]["generateName"] = "Bad-"
    assert validate_object(POD, copy.deepcopy(old), old) == []
    new = copy.deepcopy(old)
    new["metadata"]["generateName"] = "Worse_-"
    assert validate_object(POD, new, old) == []


def test_a_generate_name_is_checked_on_the_update_of_a_kind_that_validates_all_of_itself_again():
    """ValidateConfigMapUpdate (and Secret's, Service's, ServiceAccount's) runs ValidateConfigMap
    on the new object, ValidateObjectMeta with it."""
    cm = SCHEME.by_api_version_kind("v1", "ConfigMap")
    old = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}
    new = copy.deepcopy(old)
    new["metadata"]["generateName"] = "Bad_-"
    assert fields(validate_object(cm, new, old)) == [("metadata.generateName", "FieldValueInvalid")]


@pytest.mark.parametrize(("api_version", "kind", "checked"), [
    ("v1", "PersistentVolume", True),  # ValidatePersistentVolumeUpdate: ValidatePersistentVolume(new)
    ("v1", "LimitRange", True),  # limitrangeStrategy.ValidateUpdate: ValidateLimitRange(new)
    ("rbac.authorization.k8s.io/v1", "Role", True),  # ValidateRoleUpdate: ValidateRole(new), ...
    ("rbac.authorization.k8s.io/v1", "ClusterRole", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", True),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", True),
    ("storage.k8s.io/v1", "CSINode", True),  # ValidateCSINodeUpdate: ValidateCSINode(new)
    ("storage.k8s.io/v1", "VolumeAttachment", True),  # ValidateVolumeAttachmentUpdate: ...(new)
    ("apps/v1", "ControllerRevision", True),  # ValidateControllerRevisionUpdate: ...(new)
    ("apiregistration.k8s.io/v1", "APIService", True),  # ValidateAPIServiceUpdate: ValidateAPIService(new)
    ("storage.k8s.io/v1", "CSIDriver", False),  # ObjectMetaUpdate + the spec only
    ("coordination.k8s.io/v1", "Lease", False),
    ("policy/v1", "PodDisruptionBudget", False),
    ("storage.k8s.io/v1", "CSIStorageCapacity", False),
])
def test_the_kinds_whose_update_validates_all_of_itself_again_check_generate_name(
        api_version: str, kind: str, checked: bool) -> None:
    """review21 W-2: upstream's ValidateXUpdate of these kinds runs ValidateX on the new object
    (ValidateObjectMeta, generateName as a prefix); a bad generateName set by an edit was accepted."""
    rk = SCHEME.by_api_version_kind(api_version, kind)
    meta = {"name": "x", **({"namespace": "default"} if rk.namespaced else {})}
    old = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    new = copy.deepcopy(old)
    new["metadata"]["generateName"] = "a/b-"
    assert (("metadata.generateName", "FieldValueInvalid") in fields(validate_object(rk, new, old))) is checked


def test_namespace_names_are_dns_labels():
    obj = {"metadata": {"name": "a.b"}}
    [cause] = validate_object(NS, obj, None)
    assert "a lowercase RFC 1123 label must consist of" in cause.message


def test_label_keys_and_values_are_checked():
    obj = pod()
    obj["metadata"]["labels"] = {"good/key": "ok", "-bad": "v", "k": "not valid!"}
    assert fields(validate_object(POD, obj, None)) == [("metadata.labels", "FieldValueInvalid")] * 2


def test_namespace_is_immutable():
    old = pod()
    new = copy.deepcopy(old)
    new["metadata"]["namespace"] = "other"
    assert ("metadata.namespace", "FieldValueInvalid") in fields(validate_object(POD, new, old))


def test_pod_container_rules():
    obj = pod(containers=[{"name": "c", "image": "i"}, {"name": "c"}, {"name": "Bad", "image": "i",
              "resources": {"limits": {"cpu": "lots"}}}], restartPolicy="Sometimes")
    got = fields(validate_object(POD, obj, None))
    assert ("spec.containers[1].name", "FieldValueDuplicate") in got
    assert ("spec.containers[1].image", "FieldValueRequired") in got
    assert ("spec.containers[2].name", "FieldValueInvalid") in got
    assert ("spec.containers[2].resources.limits[cpu]", "FieldValueInvalid") in got
    assert ("spec.restartPolicy", "FieldValueNotSupported") in got
    assert fields(validate_object(POD, pod(containers=[]), None)) == [("spec.containers", "FieldValueRequired")]


def test_pod_update_may_change_image_and_add_tolerations_only():
    old = pod()
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "busybox:2"
    new["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    assert validate_object(POD, new, old) == []
    new["spec"]["restartPolicy"] = "Never"
    [cause] = validate_object(POD, new, old)
    assert cause.field == "spec" and cause.reason == "FieldValueForbidden"
    assert cause.message.startswith("Forbidden: pod updates may not change fields other than")


def test_service_ports():
    svc = {"metadata": {"name": "s", "namespace": "default"},
           "spec": {"ports": [{"port": 80}, {"port": 70000, "name": "b"}]}}
    got = fields(validate_object(SVC, svc, None))
    assert got == [("spec.ports[0].name", "FieldValueRequired"), ("spec.ports[1].port", "FieldValueInvalid")]
    headless = {"metadata": {"name": "s", "namespace": "default"}, "spec": {"clusterIP": "None"}}
    assert validate_object(SVC, headless, None) == []


def test_deployment_selector_must_match_template_labels():
    dep = {"metadata": {"name": "d", "namespace": "default"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "a"}},
                    "template": {"metadata": {"labels": {"app": "b"}},
                                 "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    [cause] = validate_object(DEPLOY, dep, None)
    assert cause.field == "spec.template.metadata.labels"
    assert "`selector` does not match template `labels`" in cause.message
    del dep["spec"]["selector"]
    assert ("spec.selector", "FieldValueRequired") in fields(validate_object(DEPLOY, dep, None))



def test_a_pod_template_may_not_carry_ephemeral_containers():
    """ValidatePodTemplateSpec: ``spec.template.spec.ephemeralContainers: Forbidden: ephemeral
    containers not allowed in pod template`` (was: accepted, and every Pod made from it refused)."""
    dep = {"metadata": {"name": "d", "namespace": "default"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "a"}},
                    "template": {"metadata": {"labels": {"app": "a"}},
                                 "spec": {"containers": [{"name": "c", "image": "i"}],
                                          "ephemeralContainers": [{"name": "e", "image": "i"}]}}}}
    assert messages(validate_object(DEPLOY, dep, None)) == [
        ("spec.template.spec.ephemeralContainers", "Forbidden: ephemeral containers not allowed in pod template")]

def test_job_restart_policy_and_counts():
    """validateJobSpec: Always (the pod default) is a Required error naming the two valid values;
    another unknown value is refused by the pod template's rule and by the Job's."""
    job = {"metadata": {"name": "j", "namespace": "default"},
           "spec": {"completions": -1, "template": {"spec": {"restartPolicy": "Always",
                                                             "containers": [{"name": "c", "image": "i"}]}}}}
    got = fields(validate_object(JOB, job, None))
    assert got == [("spec.completions", "FieldValueInvalid"),
                   ("spec.template.spec.restartPolicy", "FieldValueRequired")]
    assert messages(validate_object(JOB, job, None))[1][1] == 'Required value: valid values: "OnFailure", "Never"'
    job["spec"]["template"]["spec"]["restartPolicy"] = "Sometimes"
    assert fields(validate_object(JOB, job, None))[1:] == [
        ("spec.template.spec.restartPolicy", "FieldValueNotSupported"),
        ("spec.template.spec.restartPolicy", "FieldValueNotSupported")]


def test_priority_class_value_limit():
    pc = {"metadata": {"name": "huge"}, "value": 2_000_000_000}
    [cause] = validate_object(PC, pc, None)
    assert cause.field == "value" and cause.reason == "FieldValueForbidden"
    assert validate_object(PC, {"metadata": {"name": "system-cluster-critical"}, "value": 2_000_000_000}, None) == []


def test_the_system_prefix_is_reserved_for_the_known_system_priority_classes():
    """ValidatePriorityClass (IsKnownSystemPriorityClass): a ``system-`` name must be one of the
    system classes, with its value and globalDefault false (was: any ``system-`` name, any value)."""
    reserved = "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: "
    for pc, detail in (({"metadata": {"name": "system-x"}, "value": 2_000_000_000},
                        "system-x is not a known system priority class"),
                       ({"metadata": {"name": "system-node-critical"}, "value": 5},
                        "value of system-node-critical PriorityClass must be 2000001000"),
                       ({"metadata": {"name": "system-cluster-critical"}, "value": 2_000_000_000, "globalDefault": True},
                        "globalDefault of system-cluster-critical PriorityClass must be false")):
        assert messages(validate_object(PC, pc, None)) == [("metadata.name", reserved + detail)]


def messages(causes):
    return [(c.field, c.message) for c in causes]


def test_owner_references_are_complete_and_name_one_controller():
    # trial-8 F-10; apimachinery objectmeta.go ValidateOwnerReferences (no index in the field path)
    obj = pod()
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "", "kind": "", "name": "", "uid": ""},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": True},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "2", "controller": True},
        {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "3"},
    ]
    got = messages(validate_object(POD, obj, None))
    assert got[:4] == [
        ("metadata.ownerReferences.apiVersion", 'Invalid value: "": version must not be empty'),
        ("metadata.ownerReferences.kind", 'Invalid value: "": must not be empty'),
        ("metadata.ownerReferences.name", 'Invalid value: "": must not be empty'),
        ("metadata.ownerReferences.uid", 'Invalid value: "": must not be empty'),
    ]
    assert got[4][0] == "metadata.ownerReferences" and got[4][1].endswith(
        'Only one reference can have Controller set to true. Found "true" in references for ConfigMap/a and ConfigMap/b')
    assert got[5][0] == "metadata.ownerReferences" and got[5][1].endswith(
        ": /v1, Kind=Event is disallowed from being an owner")
    assert len(got) == 6


def test_finalizer_names_are_qualified_names():
    # trial-8 F-10; apimachinery objectmeta.go ValidateFinalizers
    obj = pod()
    obj["metadata"]["finalizers"] = ["example.com/ok", "bad finalizer", "x/y/z", "orphan", "foregroundDeletion"]
    got = messages(validate_object(POD, obj, None))
    assert [f for f, _ in got] == ["metadata.finalizers"] * 3
    assert got[0][1].startswith('Invalid value: "bad finalizer": name part must consist of alphanumeric characters')
    assert got[1][1].startswith('Invalid value: "x/y/z": a qualified name must consist of alphanumeric characters')
    assert got[2][1].endswith(": finalizer orphan and foregroundDeletion cannot be both set")


def test_a_docker_config_secret_names_the_json_value_as_go_does():
    # a .dockerconfigjson that is JSON but not an object: Go's UnmarshalTypeError wording (a map is
    # "object", never "number"); null decodes into the map without an error
    import base64

    secret = SCHEME.by_api_version_kind("v1", "Secret")

    def causes(text: str):
        obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
               "type": "kubernetes.io/dockerconfigjson",
               "data": {".dockerconfigjson": base64.b64encode(text.encode()).decode()}}
        return [c.message for c in validate_object(secret, obj, None)]

    assert causes("null") == []
    assert causes("{}") == []
    assert causes("[1]") == ['Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go '
                             "value of type map[string]interface {}"]
    assert causes("true") == ['Invalid value: "<secret contents redacted>": json: cannot unmarshal bool into Go '
                              "value of type map[string]interface {}"]
