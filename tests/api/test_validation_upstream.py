"""Built-in validation against kube-apiserver's own texts: each case breaks one rule of
pkg/apis/core/validation (Pods, Services, Secrets), pkg/apis/apps/validation (Deployments) or
pkg/apis/batch/validation (Jobs) and expects upstream's field path, reason and message. The cases
are the ones trial-10 (F-8) found stored with 201; the objects are defaulted first, as the API
server does before it validates."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pumice.api import Obj
from pumice.api.schema import format_value
from pumice.api.scheme import ResourceKind
from pumice.api.validation import (
    DNS1123_LABEL_ERR,
    DNS1123_SUBDOMAIN_ERR,
    validate_job_template_spec,
    validate_object,
)
from pumice.apiserver import defaults, kinds


def rk(group: str, kind: str, namespaced: bool = True) -> ResourceKind:
    return ResourceKind(group=group, version="v1", kind=kind, plural=kind.lower() + "s", namespaced=namespaced)


POD, SVC, SECRET = rk("", "Pod"), rk("", "Service"), rk("", "Secret")
DEPLOY, JOB, STS = rk("apps", "Deployment"), rk("batch", "Job"), rk("apps", "StatefulSet")


def pod(**spec: Any) -> Obj:
    base: Obj = {"containers": [{"name": "c", "image": "x"}]}
    base.update(spec)
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": base}
    defaults.pod(obj)
    return obj


def ctr(**fields: Any) -> list[Obj]:
    return [{"name": "c", "image": "x", **fields}]


def causes(kind: ResourceKind, obj: Obj) -> list[tuple[str, str, str]]:
    return [(c.field, c.reason, c.message) for c in validate_object(kind, obj, None)]


C0 = "spec.containers[0]"


POD_CASES = [
    ("mount of an unknown volume", pod(containers=ctr(volumeMounts=[{"name": "nope", "mountPath": "/x"}])),
     [(f"{C0}.volumeMounts[0].name", "FieldValueNotFound", 'Not found: "nope"')]),
    ("node affinity operator", pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Bogus", "values": ["b"]}]}]}}}),
     [("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
       ".matchExpressions[0].operator", "FieldValueInvalid", 'Invalid value: "Bogus": not a valid selector operator')]),
    ("toleration Exists with a value", pod(tolerations=[{"key": "k", "operator": "Exists", "value": "x"}]),
     [("spec.tolerations[0].operator", "FieldValueInvalid",
       "Invalid value: \"x\": value must be empty when `operator` is 'Exists'")]),
    ("toleration without key must be Exists", pod(tolerations=[{"operator": "Equal", "value": "x"}]),
     [("spec.tolerations[0].operator", "FieldValueInvalid",
       'Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all '
       'keys"')]),
    ("GPU request without a limit", pod(containers=ctr(resources={"requests": {"nvidia.com/gpu": "1"}})),
     [(f"{C0}.resources.limits", "FieldValueRequired",
       "Required value: Limit must be set for non overcommitable resources")]),
    ("GPU request different from its limit",
     pod(containers=ctr(resources={"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}})),
     [(f"{C0}.resources.requests", "FieldValueInvalid", 'Invalid value: "1": must be equal to nvidia.com/gpu limit of 2')]),
    ("GPU count not an integer",
     pod(containers=ctr(resources={"limits": {"nvidia.com/gpu": "500m"}})),
     [(f"{C0}.resources.limits[nvidia.com/gpu]", "FieldValueInvalid", 'Invalid value: "500m": must be an integer'),
      (f"{C0}.resources.requests[nvidia.com/gpu]", "FieldValueInvalid", 'Invalid value: "500m": must be an integer')]),
    ("unknown resource name", pod(containers=ctr(resources={"requests": {"bogusresource": "1"}})),
     [(f"{C0}.resources.requests[bogusresource]", "FieldValueInvalid",
       'Invalid value: "bogusresource": must be a standard resource type or fully qualified'),
      (f"{C0}.resources.requests[bogusresource]", "FieldValueInvalid",
       'Invalid value: "bogusresource": must be a standard resource for containers')]),
    ("probe without a handler", pod(containers=ctr(livenessProbe={"periodSeconds": 0})),
     [(f"{C0}.livenessProbe", "FieldValueRequired", "Required value: must specify a handler type")]),
    ("probe with two handlers",
     pod(containers=ctr(readinessProbe={"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}})),
     [(f"{C0}.readinessProbe.tcpSocket", "FieldValueForbidden", "Forbidden: may not specify more than 1 handler type")]),
    ("preStop without a handler", pod(containers=ctr(lifecycle={"preStop": {}})),
     [(f"{C0}.lifecycle.preStop", "FieldValueRequired", "Required value: must specify a handler type")]),
    ("hostname not a DNS label", pod(hostname="Bad_Host"),
     [("spec.hostname", "FieldValueInvalid", f'Invalid value: "Bad_Host": {DNS1123_LABEL_ERR}')]),
    ("nodeName not a DNS subdomain", pod(nodeName="Bad_Node"),
     [("spec.nodeName", "FieldValueInvalid", f'Invalid value: "Bad_Node": {DNS1123_SUBDOMAIN_ERR}')]),
    ("env name with '='", pod(containers=ctr(env=[{"name": "1bad=", "value": "v"}])),
     [(f"{C0}.env[0].name", "FieldValueInvalid", 'Invalid value: "1bad=": a valid environment variable name must '
       "consist only of printable ASCII characters other than '='")]),
    ("two volumes with one name", pod(volumes=[{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]),
     [("spec.volumes[1].name", "FieldValueDuplicate", 'Duplicate value: "v"')]),
    ("port name too long", pod(containers=ctr(ports=[{"name": "averyveryverylongportname", "containerPort": 80}])),
     [(f"{C0}.ports[0].name", "FieldValueInvalid",
       'Invalid value: "averyveryverylongportname": must be no more than 15 characters')]),
    ("negative runAsUser", pod(securityContext={"runAsUser": -5}),
     [("spec.securityContext.runAsUser", "FieldValueInvalid",
       "Invalid value: -5: must be between 0 and 2147483647, inclusive")]),
    ("negative container runAsUser", pod(containers=ctr(securityContext={"runAsUser": -1})),
     [(f"{C0}.securityContext.runAsUser", "FieldValueInvalid",
       "Invalid value: -1: must be between 0 and 2147483647, inclusive")]),
    ("unknown dnsPolicy", pod(dnsPolicy="Bogus"),
     [("spec.dnsPolicy", "FieldValueNotSupported", 'Unsupported value: "Bogus": supported values: '
       '"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"')]),
    ("negative emptyDir sizeLimit", pod(volumes=[{"name": "v", "emptyDir": {"sizeLimit": "-1"}}]),
     [("spec.volumes[0].emptyDir.sizeLimit", "FieldValueForbidden",
       "Forbidden: SizeLimit field must be a valid resource quantity")]),
    ("readinessProbe on an init container",
     pod(initContainers=[{"name": "i", "image": "x", "readinessProbe": {"exec": {"command": ["true"]}}}]),
     [("spec.initContainers[0].readinessProbe", "FieldValueForbidden",
       "Forbidden: may not be set for init containers without restartPolicy=Always")]),
    ("env valueFrom without a source", pod(containers=ctr(env=[{"name": "A", "valueFrom": {}}])),
     [(f"{C0}.env[0].valueFrom", "FieldValueInvalid", 'Invalid value: "": must specify one of: `fieldRef`, '
       "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`")]),
    ("env value and valueFrom",
     pod(containers=ctr(env=[{"name": "A", "value": "v", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])),
     [(f"{C0}.env[0].valueFrom", "FieldValueInvalid",
       'Invalid value: "": may not be specified when `value` is not empty')]),
    ("env fieldRef to an unknown field",
     pod(containers=ctr(env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}])),
     [(f"{C0}.env[0].valueFrom.fieldRef.fieldPath", "FieldValueInvalid",
       'Invalid value: "spec.bogus": error converting fieldPath: field label not supported: spec.bogus')]),
    ("env fieldRef to a field env cannot read",
     pod(containers=ctr(env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}])),
     [(f"{C0}.env[0].valueFrom.fieldRef.fieldPath", "FieldValueNotSupported",
       'Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", "metadata.uid", '
       '"spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", '
       '"status.podIPs"')]),
    ("volume without a source", pod(volumes=[{"name": "v"}]),
     [("spec.volumes[0]", "FieldValueRequired", "Required value: must specify a volume type")]),
    ("volume with two sources", pod(volumes=[{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]),
     [("spec.volumes[0].hostPath", "FieldValueForbidden", "Forbidden: may not specify more than 1 volume type")]),
    ("topology spread maxSkew 0", pod(topologySpreadConstraints=[
        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
     [("spec.topologySpreadConstraints[0].maxSkew", "FieldValueInvalid", "Invalid value: 0: must be greater than zero")]),
    ("hostNetwork with a different hostPort",
     pod(hostNetwork=True, containers=ctr(ports=[{"containerPort": 80, "hostPort": 81}])),
     [(f"{C0}.ports[0].hostPort", "FieldValueInvalid",
       "Invalid value: 81: must match `containerPort` when `hostNetwork` is true")]),
    ("secret volume item without a key and with a path going up",
     pod(volumes=[{"name": "v", "secret": {"secretName": "s", "items": [{"path": "../x"}]}}]),
     [("spec.volumes[0].secret.items[0].key", "FieldValueRequired", "Required value"),
      ("spec.volumes[0].secret.items[0].path", "FieldValueInvalid", 'Invalid value: "../x": must not contain \'..\'')]),
    ("projected source with two types", pod(volumes=[{"name": "v", "projected": {"sources": [
        {"secret": {"name": "s"}, "configMap": {"name": "c"}}]}}]),
     [("spec.volumes[0].projected.sources[0]", "FieldValueForbidden",
       "Forbidden: may not specify more than 1 volume type per source")]),
    ("downwardAPI item without a source", pod(volumes=[{"name": "v", "downwardAPI": {"items": [{"path": "p"}]}}]),
     [("spec.volumes[0].downwardAPI", "FieldValueRequired", "Required value: one of fieldRef and resourceFieldRef is "
       "required")]),
    ("dnsPolicy None without dnsConfig", pod(dnsPolicy="None"),
     [("spec.dnsConfig", "FieldValueRequired", "Required value: must provide `dnsConfig` when `dnsPolicy` is None")]),
    ("dnsConfig nameserver not an IP", pod(dnsConfig={"nameservers": ["x"]}),
     [("spec.dnsConfig.nameservers[0]", "FieldValueInvalid",
       'Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)')]),
    ("imagePullSecrets entry with more than a name", pod(imagePullSecrets=[{"name": "r", "namespace": "x"}]),
     [("spec.imagePullSecrets[0]", "FieldValueInvalid",
       'Invalid value: core.LocalObjectReference{Name:"r"}: only name may be set')]),
    ("scheduling gate repeated", pod(schedulingGates=[{"name": "a.b/c"}, {"name": "a.b/c"}]),
     [("spec.schedulingGates[1]", "FieldValueDuplicate", 'Duplicate value: "a.b/c"')]),
    ("nodeName with scheduling gates", pod(nodeName="n1", schedulingGates=[{"name": "g"}]),
     [("spec.nodeName", "FieldValueForbidden", "Forbidden: cannot be set until all schedulingGates have been cleared")]),
    ("hostAlias without an IP", pod(hostAliases=[{"hostnames": ["a.example"]}]),
     [("spec.hostAliases[0].ip", "FieldValueInvalid",
       'Invalid value: "": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)')]),
    ("unknown preemptionPolicy", pod(preemptionPolicy="Sometimes"),
     [("spec.preemptionPolicy", "FieldValueNotSupported",
       'Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"')]),
    ("unknown os", pod(os={"name": "plan9"}),
     [("spec.os", "FieldValueNotSupported", 'Unsupported value: "plan9": supported values: "linux", "windows"')]),
    ("seccompProfile without a type", pod(securityContext={"seccompProfile": {}}),
     [("spec.securityContext.seccompProfile.type", "FieldValueRequired",
       "Required value: type is required when seccompProfile is set")]),
    ("unknown seccompProfile type", pod(containers=ctr(securityContext={"seccompProfile": {"type": "Default"}})),
     [(f"{C0}.securityContext.seccompProfile.type", "FieldValueNotSupported",
       'Unsupported value: "Default": supported values: "Localhost", "RuntimeDefault", "Unconfined"')]),
    ("Localhost seccompProfile without a profile", pod(securityContext={"seccompProfile": {"type": "Localhost"}}),
     [("spec.securityContext.seccompProfile.localhostProfile", "FieldValueRequired",
       "Required value: must be set when seccomp type is Localhost")]),
    ("Localhost seccompProfile going up",
     pod(securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "/a/../../b.json"}}),
     [("spec.securityContext.seccompProfile.localhostProfile", "FieldValueInvalid",
       'Invalid value: "/a/../../b.json": must be a relative path'),
      ("spec.securityContext.seccompProfile.localhostProfile", "FieldValueInvalid",
       "Invalid value: \"/a/../../b.json\": must not contain '..'")]),
    ("localhostProfile with RuntimeDefault",
     pod(containers=ctr(securityContext={"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "p.json"}})),
     [(f"{C0}.securityContext.seccompProfile.localhostProfile", "FieldValueInvalid",
       'Invalid value: core.SeccompProfile{Type:"RuntimeDefault", LocalhostProfile:(*string)(...)}: can only be set '
       "when seccomp type is Localhost")]),
    ("hostPath going up with an unknown type",
     pod(volumes=[{"name": "v", "hostPath": {"path": "/data/../etc", "type": "Dir"}}]),
     [("spec.volumes[0].hostPath.path", "FieldValueInvalid", "Invalid value: \"/data/../etc\": must not contain '..'"),
      ("spec.volumes[0].hostPath.type", "FieldValueNotSupported",
       'Unsupported value: "Dir": supported values: "", "BlockDevice", "CharDevice", "Directory", '
       '"DirectoryOrCreate", "File", "FileOrCreate", "Socket"')]),
    ("negative overhead", pod(overhead={"cpu": "-1"}),
     [("spec.overhead.limits[cpu]", "FieldValueInvalid", 'Invalid value: "-1": must be greater than or equal to 0')]),
]


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES])
def test_pod_rule_has_upstreams_cause(obj: Obj, want: list[tuple[str, str, str]]) -> None:
    assert causes(POD, obj) == want


def test_a_pod_using_every_checked_field_well_is_valid() -> None:
    obj = pod(
        volumes=[{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}, {"name": "cfg", "configMap": {"name": "c"}},
                 {"name": "host", "hostPath": {"path": "/var/log", "type": "DirectoryOrCreate"}}],
        containers=ctr(
            ports=[{"name": "http", "containerPort": 8080}],
            env=[{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                 {"name": "LBL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                 {"name": "my.var-1", "value": "x"}],
            volumeMounts=[{"name": "data", "mountPath": "/data"}, {"name": "cfg", "mountPath": "/cfg"}],
            resources={"limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}},
            livenessProbe={"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
            lifecycle={"preStop": {"exec": {"command": ["sleep", "1"]}}},
            securityContext={"runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}),
        initContainers=[{"name": "init", "image": "x", "restartPolicy": "Always",
                         "readinessProbe": {"tcpSocket": {"port": 8080}}}],
        tolerations=[{"operator": "Exists"}, {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
        topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}],
        hostname="h-1", subdomain="s", nodeName="node-1.example",
        securityContext={"runAsUser": 0, "seccompProfile": {"type": "Localhost", "localhostProfile": "prof/a.json"}},
        dnsConfig={"nameservers": ["1.1.1.1"], "searches": ["ns.svc.cluster.local."], "options": [{"name": "ndots"}]},
        readinessGates=[{"conditionType": "example.com/ready"}], imagePullSecrets=[{"name": "reg"}],
        hostAliases=[{"ip": "10.0.0.1", "hostnames": ["a.example"]}], preemptionPolicy="Never", os={"name": "linux"},
        overhead={"cpu": "100m"})
    assert causes(POD, obj) == []


def test_a_pod_template_gets_the_pod_rules_at_its_path() -> None:
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}, "serviceName": "s",
                    "template": {"metadata": {"labels": {"a": "b"}},
                                 "spec": {"containers": ctr(volumeMounts=[{"name": "nope", "mountPath": "/x"}])}}}}
    kinds.statefulset(sts)
    from pumice.apiserver.kinds import _check_statefulset
    got = [(c.field, c.message) for c in _check_statefulset(sts["spec"], None)]
    assert got == [("spec.template.spec.containers[0].volumeMounts[0].name", 'Not found: "nope"')]


def test_a_statefulset_container_may_mount_its_claim_template() -> None:
    """kube-apiserver accepts it (it skips the template's pod spec rules); the Pods get the volume."""
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}, "serviceName": "s",
                    "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                              "spec": {"resources": {"requests": {"storage": "1Gi"}}}}],
                    "template": {"metadata": {"labels": {"a": "b"}},
                                 "spec": {"containers": ctr(volumeMounts=[{"name": "data", "mountPath": "/d"}])}}}}
    kinds.statefulset(sts)
    from pumice.apiserver.kinds import _check_statefulset
    assert _check_statefulset(sts["spec"], None) == []
    assert "volumes" not in sts["spec"]["template"]["spec"]  # the check does not change the object


# --- Deployments and Jobs -------------------------------------------------------------------------


def deploy(**spec: Any) -> Obj:
    base: Obj = {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": ctr()}}}
    base.update(spec)
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
           "spec": base}
    defaults.deployment(obj)
    return obj


DEPLOY_CASES = [
    ("unknown strategy type", deploy(strategy={"type": "Bogus"}),
     [("spec.strategy", "FieldValueNotSupported",
       'Unsupported value: apps.DeploymentStrategy{Type:"Bogus", RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: '
       'supported values: "Recreate", "RollingUpdate"')]),
    ("maxSurge and maxUnavailable both 0",
     deploy(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
     [("spec.strategy.rollingUpdate.maxUnavailable", "FieldValueInvalid",
       'Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: may not be 0 when `maxSurge` is 0')]),
    ("maxSurge not a percentage",
     deploy(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "200x%"}}),
     [("spec.strategy.rollingUpdate.maxSurge", "FieldValueInvalid",
       'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"200x%"}: a valid percent string must be a '
       "numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")]),
    ("maxUnavailable over 100%",
     deploy(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%"}}),
     [("spec.strategy.rollingUpdate.maxUnavailable", "FieldValueInvalid",
       'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%')]),
    ("rollingUpdate with Recreate", deploy(strategy={"type": "Recreate", "rollingUpdate": {}}),
     [("spec.strategy.rollingUpdate", "FieldValueForbidden",
       "Forbidden: may not be specified when strategy `type` is 'Recreate'")]),
    ("negative revisionHistoryLimit", deploy(revisionHistoryLimit=-1),
     [("spec.revisionHistoryLimit", "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0")]),
    ("progressDeadlineSeconds not above minReadySeconds", deploy(progressDeadlineSeconds=0),
     [("spec.progressDeadlineSeconds", "FieldValueInvalid", "Invalid value: 0: must be greater than minReadySeconds")]),
    ("activeDeadlineSeconds in the template",
     deploy(template={"metadata": {"labels": {"a": "b"}}, "spec": {"containers": ctr(), "activeDeadlineSeconds": 5}}),
     [("spec.template.spec.activeDeadlineSeconds", "FieldValueInvalid", "Invalid value: 5: must not be specified")]),
    ("a bad template container", deploy(template={"metadata": {"labels": {"a": "b"}},
                                                  "spec": {"containers": ctr(lifecycle={"postStart": {}})}}),
     [("spec.template.spec.containers[0].lifecycle.postStart", "FieldValueRequired",
       "Required value: must specify a handler type")]),
]


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in DEPLOY_CASES], ids=[c[0] for c in DEPLOY_CASES])
def test_deployment_rule_has_upstreams_cause(obj: Obj, want: list[tuple[str, str, str]]) -> None:
    assert causes(DEPLOY, obj) == want


def job(**spec: Any) -> Obj:
    base: Obj = {"template": {"spec": {"containers": ctr(), "restartPolicy": "Never"}}}
    base.update(spec)
    obj = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "default", "uid": "u1"}, "spec": base}
    defaults.job(obj)  # the decoder's defaulting, then PrepareForCreate's generated selector
    defaults.job_generate_selector(obj)
    return obj


def test_job_negative_ttl_is_invalid() -> None:
    assert causes(JOB, job(ttlSecondsAfterFinished=-1)) == [
        ("spec.ttlSecondsAfterFinished", "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0")]


def test_indexed_job_needs_completions() -> None:
    assert causes(JOB, job(completionMode="Indexed", parallelism=2)) == [
        ("spec.completions", "FieldValueRequired", "Required value: when completion mode is Indexed")]


SP_STRUCT = ("batch.SuccessPolicy{Rules:[]batch.SuccessPolicyRule{batch.SuccessPolicyRule{"
             "SucceededIndexes:(*string)(0xc000000000), SucceededCount:(*int32)(nil)}}}")

INDEXED_CASES = [
    ("successPolicy on a NonIndexed Job", job(successPolicy={"rules": [{"succeededIndexes": "0"}]}),
     [("spec.successPolicy", "FieldValueInvalid", f"Invalid value: {SP_STRUCT}: requires indexed completion mode")]),
    ("successPolicy without rules", job(completionMode="Indexed", completions=3, successPolicy={"rules": []}),
     [("spec.successPolicy.rules", "FieldValueRequired",
       "Required value: at least one rules must be specified when the successPolicy is specified")]),
    ("successPolicy rule with neither field", job(completionMode="Indexed", completions=3, successPolicy={"rules": [{}]}),
     [("spec.successPolicy.rules[0]", "FieldValueRequired",
       "Required value: at least one of succeededCount or succeededIndexes must be specified")]),
    ("succeededIndexes past completions",
     job(completionMode="Indexed", completions=3, successPolicy={"rules": [{"succeededIndexes": "0-3"}]}),
     [("spec.successPolicy.rules[0].succeededIndexes", "FieldValueInvalid",
       'Invalid value: "0-3": error parsing succeededIndexes: too large index: "3"')]),
    ("succeededIndexes not increasing",
     job(completionMode="Indexed", completions=9, successPolicy={"rules": [{"succeededIndexes": "4,2"}]}),
     [("spec.successPolicy.rules[0].succeededIndexes", "FieldValueInvalid",
       'Invalid value: "4,2": error parsing succeededIndexes: non-increasing order, previous: 4, current: 2')]),
    ("succeededCount above the rule's indexes",
     job(completionMode="Indexed", completions=9,
         successPolicy={"rules": [{"succeededIndexes": "1,2", "succeededCount": 3}]}),
     [("spec.successPolicy.rules[0].succeededCount", "FieldValueInvalid", "Invalid value: 3: must be less than or "
       "equal to 2 (the number of indexes in the specified succeededIndexes field)")]),
    ("succeededCount above completions",
     job(completionMode="Indexed", completions=2, successPolicy={"rules": [{"succeededCount": 3}]}),
     [("spec.successPolicy.rules[0].succeededCount", "FieldValueInvalid",
       "Invalid value: 3: must be less than or equal to 2 (the number of specified completions)")]),
    ("backoffLimitPerIndex on a NonIndexed Job", job(backoffLimitPerIndex=1),
     [("spec.backoffLimitPerIndex", "FieldValueInvalid", "Invalid value: 1: requires indexed completion mode")]),
    ("maxFailedIndexes without backoffLimitPerIndex", job(completionMode="Indexed", completions=3, maxFailedIndexes=1),
     [("spec.backoffLimitPerIndex", "FieldValueRequired", "Required value: when maxFailedIndexes is specified")]),
    ("maxFailedIndexes above completions",
     job(completionMode="Indexed", completions=3, backoffLimitPerIndex=1, maxFailedIndexes=4),
     [("spec.maxFailedIndexes", "FieldValueInvalid", "Invalid value: 4: must be less than or equal to completions")]),
    ("Indexed parallelism above 100000", job(completionMode="Indexed", completions=3, parallelism=100_001),
     [("spec.parallelism", "FieldValueInvalid",
       "Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed")]),
]


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in INDEXED_CASES], ids=[c[0] for c in INDEXED_CASES])
def test_indexed_job_rule_has_upstreams_cause(obj: Obj, want: list[tuple[str, str, str]]) -> None:
    assert causes(JOB, obj) == want


def test_indexed_job_name_must_leave_room_for_the_index_hostname() -> None:
    obj = job(completionMode="Indexed", completions=10)
    obj["metadata"]["name"] = "a" * 62
    labels = obj["spec"]["template"]["metadata"]["labels"]  # generated for the name "j"
    labels["job-name"] = labels["batch.kubernetes.io/job-name"] = "a" * 62
    assert causes(JOB, obj) == [("metadata.name", "FieldValueInvalid", f'Invalid value: "{"a" * 62}": will not able '
                                 f"to create pod with invalid DNS label: {'a' * 62}-9")]


def test_success_policy_is_immutable_and_indexed_completions_change_with_parallelism() -> None:
    old = job(completionMode="Indexed", completions=3, parallelism=3,
              successPolicy={"rules": [{"succeededIndexes": "0"}]})
    new = copy.deepcopy(old)
    new["spec"]["successPolicy"] = {"rules": [{"succeededIndexes": "1"}]}
    new["spec"]["completions"] = 4
    assert [(c.field, c.message) for c in validate_object(JOB, new, old)] == [
        ("spec.completions", "Invalid value: 4: can only be modified in tandem with spec.parallelism"),
        ("spec.successPolicy", f"Invalid value: {SP_STRUCT}: field is immutable")]
    new["spec"]["successPolicy"] = old["spec"]["successPolicy"]
    new["spec"]["parallelism"] = 4
    assert validate_object(JOB, new, old) == []


def test_backoff_limit_defaults_to_max_int32_with_backoff_limit_per_index() -> None:
    assert job(completionMode="Indexed", completions=2, backoffLimitPerIndex=1)["spec"]["backoffLimit"] == 2**31 - 1
    assert job(completionMode="Indexed", completions=2)["spec"]["backoffLimit"] == 6


def pfp(*rules: Obj) -> Obj:
    return {"rules": list(rules)}


def on_codes(action: str = "FailJob", operator: str = "In", values: Any = (42,), **extra: Any) -> Obj:
    return {"action": action, "onExitCodes": {"operator": operator, "values": list(values), **extra}}


QUALIFIED_EMPTY = [
    ("spec.podFailurePolicy.rules[0].onPodConditions[0].type", "FieldValueInvalid",
     'Invalid value: "": name part must be non-empty'),
    ("spec.podFailurePolicy.rules[0].onPodConditions[0].type", "FieldValueInvalid",
     "Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
     "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
     "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")]

# pkg/apis/batch/validation validatePodFailurePolicy, validatePodReplacementPolicy, spec.managedBy
POD_FAILURE_POLICY_CASES = [
    ("more than 20 rules", job(podFailurePolicy=pfp(*[on_codes(values=[i + 1]) for i in range(21)])),
     [("spec.podFailurePolicy.rules", "FieldValueTooMany", "Too many: 21: must have at most 20 items")]),
    ("a rule without an action", job(podFailurePolicy=pfp(on_codes(action=""))),
     [("spec.podFailurePolicy.rules[0].action", "FieldValueRequired",
       'Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]')]),
    ("an unknown action", job(podFailurePolicy=pfp(on_codes(action="Retry"))),
     [("spec.podFailurePolicy.rules[0].action", "FieldValueNotSupported",
       'Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", "Ignore"')]),
    ("FailIndex without backoffLimitPerIndex",
     job(completionMode="Indexed", completions=2, podFailurePolicy=pfp(on_codes(action="FailIndex"))),
     [("spec.podFailurePolicy.rules[0].action", "FieldValueInvalid",
       'Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set')]),
    ("neither onExitCodes nor onPodConditions", job(podFailurePolicy=pfp({"action": "Ignore"})),
     [("spec.podFailurePolicy.rules[0]", "FieldValueInvalid",
       "Invalid value: specifying one of OnExitCodes and OnPodConditions is required")]),
    ("both onExitCodes and onPodConditions",
     job(podFailurePolicy=pfp({**on_codes(), "onPodConditions": [{"type": "DisruptionTarget"}]})),
     [("spec.podFailurePolicy.rules[0]", "FieldValueInvalid",
       "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported")]),
    ("onExitCodes without an operator", job(podFailurePolicy=pfp(on_codes(operator=""))),
     [("spec.podFailurePolicy.rules[0].onExitCodes.operator", "FieldValueRequired",
       'Required value: valid values: ["In" "NotIn"]')]),
    ("an unknown operator", job(podFailurePolicy=pfp(on_codes(operator="Equals"))),
     [("spec.podFailurePolicy.rules[0].onExitCodes.operator", "FieldValueNotSupported",
       'Unsupported value: "Equals": supported values: "In", "NotIn"')]),
    ("a containerName not in the template", job(podFailurePolicy=pfp(on_codes(containerName="sidecar"))),
     [("spec.podFailurePolicy.rules[0].onExitCodes.containerName", "FieldValueInvalid",
       'Invalid value: "sidecar": must be one of the container or initContainer names in the pod template')]),
    ("no values", job(podFailurePolicy=pfp(on_codes(values=[]))),
     [("spec.podFailurePolicy.rules[0].onExitCodes.values", "FieldValueInvalid",
       "Invalid value: []int32{}: at least one value is required")]),
    ("more than 255 values", job(podFailurePolicy=pfp(on_codes(values=range(1, 257)))),
     [("spec.podFailurePolicy.rules[0].onExitCodes.values", "FieldValueTooMany",
       "Too many: 256: must have at most 255 items")]),
    ("0 with In, a duplicate, out of order", job(podFailurePolicy=pfp(on_codes(values=[0, 3, 3, 1]))),
     [("spec.podFailurePolicy.rules[0].onExitCodes.values[0]", "FieldValueInvalid",
       "Invalid value: 0: must not be 0 for the In operator"),
      ("spec.podFailurePolicy.rules[0].onExitCodes.values[2]", "FieldValueDuplicate", "Duplicate value: 3"),
      ("spec.podFailurePolicy.rules[0].onExitCodes.values", "FieldValueInvalid",
       "Invalid value: []int32{0, 3, 3, 1}: must be ordered")]),
    ("an empty condition type and an unknown status",
     job(podFailurePolicy=pfp({"action": "Ignore", "onPodConditions": [{"type": "", "status": "Maybe"}]})),
     [*QUALIFIED_EMPTY, ("spec.podFailurePolicy.rules[0].onPodConditions[0].status", "FieldValueNotSupported",
                         'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"')]),
    ("more than 20 condition patterns",
     job(podFailurePolicy=pfp({"action": "Ignore", "onPodConditions": [{"type": f"C{i}"} for i in range(21)]})),
     [("spec.podFailurePolicy.rules[0].onPodConditions", "FieldValueTooMany",
       "Too many: 21: must have at most 20 items")]),
    ("restartPolicy OnFailure with a podFailurePolicy",
     job(podFailurePolicy=pfp(on_codes()), template={"spec": {"containers": ctr(), "restartPolicy": "OnFailure"}}),
     [("spec.template.spec.restartPolicy", "FieldValueInvalid",
       'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified')]),
    ("podReplacementPolicy TerminatingOrFailed with a podFailurePolicy",
     job(podFailurePolicy=pfp(on_codes()), podReplacementPolicy="TerminatingOrFailed"),
     [("spec.podReplacementPolicy", "FieldValueNotSupported",
       'Unsupported value: "TerminatingOrFailed": supported values: "Failed"')]),
    ("an unknown podReplacementPolicy", job(podReplacementPolicy="Never"),
     [("spec.podReplacementPolicy", "FieldValueNotSupported",
       'Unsupported value: "Never": supported values: "Failed", "TerminatingOrFailed"')]),
    ("managedBy without a domain", job(managedBy="my-controller"),
     [("spec.managedBy", "FieldValueInvalid",
       'Invalid value: "my-controller": must be a domain-prefixed path (such as "acme.io/foo")')]),
    ("managedBy with a bad domain and path", job(managedBy="Acme.io/a b"),
     [("spec.managedBy", "FieldValueInvalid", f'Invalid value: "Acme.io": {DNS1123_SUBDOMAIN_ERR}'),
      ("spec.managedBy", "FieldValueInvalid",
       "Invalid value: \"a b\": Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')")]),
    ("managedBy longer than 63", job(managedBy="acme.io/" + "x" * 56),
     [("spec.managedBy", "FieldValueTooLong", "Too long: may not be more than 63 bytes")]),
]


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in POD_FAILURE_POLICY_CASES],
                         ids=[c[0] for c in POD_FAILURE_POLICY_CASES])
def test_pod_failure_policy_rule_has_upstreams_cause(obj: Obj, want: list[tuple[str, str, str]]) -> None:
    assert causes(JOB, obj) == want


def test_valid_pod_failure_policies_and_managed_by_pass() -> None:
    good = job(completionMode="Indexed", completions=3, backoffLimitPerIndex=1, managedBy="kueue.x-k8s.io/multikueue",
               podFailurePolicy=pfp(on_codes(action="FailIndex", containerName="c", values=[1, 2, 42]),
                                    on_codes(action="Count", operator="NotIn", values=[0, 1]),
                                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}))
    assert causes(JOB, good) == []


def test_pod_failure_policy_defaults_replacement_failed_and_condition_status_true() -> None:
    obj = job(podFailurePolicy=pfp({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}))
    assert obj["spec"]["podReplacementPolicy"] == "Failed"
    assert obj["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
        {"type": "DisruptionTarget", "status": "True"}]
    assert job()["spec"]["podReplacementPolicy"] == "TerminatingOrFailed"


def test_pod_failure_policy_and_managed_by_are_immutable() -> None:
    old = job(managedBy="acme.io/batch", podFailurePolicy=pfp(
        on_codes(), {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}))
    new = copy.deepcopy(old)
    new["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] = [43]
    new["spec"]["managedBy"] = "kubernetes.io/job-controller"
    shown = ("batch.PodFailurePolicy{Rules:[]batch.PodFailurePolicyRule{batch.PodFailurePolicyRule{"
             'Action:"FailJob", OnExitCodes:(*batch.PodFailurePolicyOnExitCodesRequirement)(0xc000000000), '
             "OnPodConditions:[]batch.PodFailurePolicyOnPodConditionsPattern(nil)}, batch.PodFailurePolicyRule{"
             'Action:"Ignore", OnExitCodes:(*batch.PodFailurePolicyOnExitCodesRequirement)(nil), '
             "OnPodConditions:[]batch.PodFailurePolicyOnPodConditionsPattern{batch.PodFailurePolicyOnPodConditionsPattern"
             '{Type:"DisruptionTarget", Status:"True"}}}}}')
    assert [(c.field, c.message) for c in validate_object(JOB, new, old)] == [
        ("spec.podFailurePolicy", f"Invalid value: {shown}: field is immutable"),
        ("spec.managedBy", 'Invalid value: "kubernetes.io/job-controller": field is immutable')]


def test_job_active_deadline_zero_is_valid_and_negative_is_not() -> None:
    """validateJobSpec checks activeDeadlineSeconds with ValidateNonnegativeField."""
    assert causes(JOB, job(activeDeadlineSeconds=0)) == []
    assert causes(JOB, job(activeDeadlineSeconds=-1)) == [
        ("spec.activeDeadlineSeconds", "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0")]


def test_a_cronjobs_job_template_gets_the_job_spec_rules() -> None:
    """ValidateJobTemplateSpec: validateJobSpec under spec.jobTemplate.spec, no selector, no
    manualSelector true."""
    spec = job(podFailurePolicy=pfp(on_codes(values=[2, 1])), podReplacementPolicy="TerminatingOrFailed",
               selector={"matchLabels": {"a": "b"}}, manualSelector=True, managedBy="x")["spec"]
    got = [(c.field, c.reason, c.message) for c in validate_job_template_spec(spec, "spec.jobTemplate.spec")]
    assert got == [
        ("spec.jobTemplate.spec.managedBy", "FieldValueInvalid",
         'Invalid value: "x": must be a domain-prefixed path (such as "acme.io/foo")'),
        ("spec.jobTemplate.spec.podFailurePolicy.rules[0].onExitCodes.values", "FieldValueInvalid",
         "Invalid value: []int32{2, 1}: must be ordered"),
        ("spec.jobTemplate.spec.podReplacementPolicy", "FieldValueNotSupported",
         'Unsupported value: "TerminatingOrFailed": supported values: "Failed"'),
        ("spec.jobTemplate.spec.selector", "FieldValueInvalid",
         'Invalid value: {"matchLabels":{"a":"b"}}: `selector` will be auto-generated'),
        ("spec.jobTemplate.spec.manualSelector", "FieldValueNotSupported",
         'Unsupported value: true: supported values: "nil", "false"')]


# --- Services and Secrets -------------------------------------------------------------------------


def svc(**spec: Any) -> Obj:
    base: Obj = {"ports": [{"port": 80}]}
    base.update(spec)
    obj = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": base}
    defaults.service(obj)
    return obj


SVC_CASES = [
    ("clusterIP not an IP", svc(clusterIP="999.1.1.1"),
     [("spec.clusterIPs[0]", "FieldValueInvalid",
       'Invalid value: "999.1.1.1": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)')]),
    ("ExternalName without externalName", svc(type="ExternalName", ports=[]),
     [("spec.externalName", "FieldValueRequired", "Required value")]),
    ("unknown sessionAffinity", svc(sessionAffinity="Bogus"),
     [("spec.sessionAffinity", "FieldValueNotSupported",
       'Unsupported value: "Bogus": supported values: "ClientIP", "None"')]),
    ("headless NodePort", svc(type="NodePort", clusterIP="None"),
     [("spec.clusterIPs[0]", "FieldValueInvalid",
       "Invalid value: \"None\": may not be set to 'None' for NodePort services")]),
    ("externalTrafficPolicy on a ClusterIP Service", svc(externalTrafficPolicy="Local"),
     [("spec.externalTrafficPolicy", "FieldValueInvalid",
       'Invalid value: "Local": may only be set for externally-accessible services')]),
    ("unknown ipFamily", svc(ipFamilies=["IPv7"]),
     [("spec.ipFamilies[0]", "FieldValueNotSupported", 'Unsupported value: "IPv7": supported values: "IPv4", "IPv6"')]),
]


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in SVC_CASES], ids=[c[0] for c in SVC_CASES])
def test_service_rule_has_upstreams_cause(obj: Obj, want: list[tuple[str, str, str]]) -> None:
    assert causes(SVC, obj) == want


def test_valid_services_of_each_type_pass() -> None:
    for obj in (svc(), svc(clusterIP="None"), svc(type="NodePort", ports=[{"port": 80, "nodePort": 30080}],
                                                  externalTrafficPolicy="Local"),
                svc(type="ExternalName", externalName="db.example.com.", ports=[]), svc(clusterIP="10.0.0.10")):
        assert causes(SVC, obj) == []


def secret(stype: str, data: dict[str, str]) -> Obj:
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
           "type": stype, "data": copy.deepcopy(data)}
    defaults.secret(obj)
    return obj


@pytest.mark.parametrize(("stype", "data", "want"), [
    ("kubernetes.io/tls", {}, [("data[tls.crt]", "FieldValueRequired", "Required value"),
                               ("data[tls.key]", "FieldValueRequired", "Required value")]),
    ("kubernetes.io/tls", {"tls.crt": "YQ==", "tls.key": "YQ=="}, []),
    ("kubernetes.io/dockerconfigjson", {}, [("data[.dockerconfigjson]", "FieldValueRequired", "Required value")]),
    ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": "e30="}, []),
    ("kubernetes.io/basic-auth", {}, [("data[username]", "FieldValueRequired", "Required value"),
                                      ("data[password]", "FieldValueRequired", "Required value")]),
    ("kubernetes.io/basic-auth", {"password": ""}, []),
    ("kubernetes.io/ssh-auth", {}, [("data[ssh-privatekey]", "FieldValueRequired", "Required value")]),
    ("Opaque", {}, []),
])
def test_typed_secret_keys(stype: str, data: dict[str, str], want: list[tuple[str, str, str]]) -> None:
    assert causes(SECRET, secret(stype, data)) == want


def test_a_pod_update_validates_the_whole_new_pod_also_when_only_its_metadata_changed() -> None:
    """validation.go ValidatePodUpdate runs validatePodMetadataAndSpec on the new Pod: a stored
    Pod that breaks a rule cannot change its labels either."""
    stored = pod(containers=ctr(resources={"requests": {"nvidia.com/gpu": "1"}}))
    relabelled = copy.deepcopy(stored)
    relabelled["metadata"]["labels"] = {"a": "b"}
    assert [(c.field, c.reason) for c in validate_object(POD, relabelled, stored)] == [
        ("spec.containers[0].resources.limits", "FieldValueRequired")]
    fine = pod()
    relabelled = copy.deepcopy(fine)
    relabelled["metadata"]["labels"] = {"a": "b"}
    assert validate_object(POD, relabelled, fine) == []


def test_a_pod_update_may_not_unset_active_deadline_seconds() -> None:
    stored = pod(activeDeadlineSeconds=30)
    unset, longer = pod(), pod(activeDeadlineSeconds=60)
    assert [(c.field, c.reason, c.message) for c in validate_object(POD, unset, stored)] == [
        ("spec.activeDeadlineSeconds", "FieldValueInvalid",
         "Invalid value: null: must not update from a positive integer to nil value")]
    assert [(c.field, c.message) for c in validate_object(POD, longer, stored)] == [
        ("spec.activeDeadlineSeconds", "Invalid value: 60: must be less than or equal to previous value")]
    assert validate_object(POD, pod(activeDeadlineSeconds=10), stored) == []


@pytest.mark.parametrize(("expr", "want"), [
    ({"key": "a", "operator": "Bogus", "values": ["b"]},
     ("spec.selector.matchExpressions[0].operator", "FieldValueInvalid",
      'Invalid value: "Bogus": not a valid selector operator')),
    ({"key": "a", "operator": "Exists", "values": ["b"]},
     ("spec.selector.matchExpressions[0].values", "FieldValueForbidden",
      "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")),
])
def test_a_deployment_selector_is_checked_by_validate_label_selector(expr: Obj, want: tuple[str, str, str]) -> None:
    """apps ValidateDeploymentSpec runs metav1 ValidateLabelSelector on spec.selector (one
    implementation here, label_selector_causes; the workloads' own copy said NotSupported for an
    unknown operator and let Exists carry values), then names a selector LabelSelectorAsSelector
    refuses once more ("invalid label selector") and leaves the template unchecked."""
    selector = {"matchExpressions": [expr]}
    assert causes(DEPLOY, deploy(selector=selector)) == [
        want, ("spec.selector", "FieldValueInvalid",
               f"Invalid value: {format_value(selector)}: invalid label selector")]


def test_a_jobs_empty_manual_selector_is_allowed_where_a_deployments_is_refused() -> None:
    """apps ValidateDeploymentSpec and ValidateReplicaSetSpec refuse an empty selector ("empty
    selector is invalid for deployment"); batch ValidateJobSpec has no such rule (an empty
    manual selector matches every Pod), so a Job with manualSelector and selector {} is valid."""
    assert causes(DEPLOY, deploy(selector={})) == [
        ("spec.selector", "FieldValueInvalid", "Invalid value: {}: empty selector is invalid for deployment")]
    assert causes(JOB, job(manualSelector=True, selector={})) == []


def test_a_jobs_empty_selector_without_manual_selector_gets_the_controller_uid() -> None:
    """The Job strategy's generateSelector adds the controller-uid label to the selector the Job
    gives, an empty one too, so that it selects this Job's Pods only (pumice kept selector {} as
    given, which selects every Pod of the namespace)."""
    got = job(selector={})
    assert got["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}
    assert causes(JOB, got) == []
    assert job(selector={"matchLabels": {"a": "b"}})["spec"]["selector"] == {
        "matchLabels": {"a": "b", "batch.kubernetes.io/controller-uid": "u1"}}


def test_a_jobs_selector_given_without_manual_selector_must_be_the_generated_one() -> None:
    """validateGeneratedSelector: without manualSelector, a selector naming other labels is
    refused ("`selector` not auto-generated", even when the template has them), and the
    template's generated labels must carry the Job's uid and name."""
    got = job(selector={"matchLabels": {"a": "b"}}, template={"metadata": {"labels": {"a": "b"}}, "spec": {
        "containers": ctr(), "restartPolicy": "Never"}})
    assert ("spec.selector", "FieldValueInvalid",
            'Invalid value: {"matchLabels":{"a":"b","batch.kubernetes.io/controller-uid":"u1"}}: '
            "`selector` not auto-generated") in causes(JOB, got)
    wrong = job(template={"metadata": {"labels": {"job-name": "other"}}, "spec": {"containers": ctr(),
                                                                                "restartPolicy": "Never"}})
    assert [c for c in causes(JOB, wrong) if c[0].startswith("spec.template.metadata.labels[")] == [
        ("spec.template.metadata.labels[job-name]", "FieldValueInvalid",
         'Invalid value: {"batch.kubernetes.io/controller-uid":"u1","batch.kubernetes.io/job-name":"j",'
         '"controller-uid":"u1","job-name":"other"}: must be \'j\'')]
    assert causes(JOB, job()) == []
    assert causes(JOB, job(manualSelector=True, selector={"matchLabels": {"a": "b"}}, template={
        "metadata": {"labels": {"a": "b"}}, "spec": {"containers": ctr(), "restartPolicy": "Never"}})) == []
