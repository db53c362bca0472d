"""Upstream's ValidateRayClusterSpec cases pumice did not check before session 15, ported from
kuberay ray-operator/controllers/ray/utils/validation_test.go (master feeaf72fa): GCS fault
tolerance, Redis password and username, autoscaler, group resources and labels, worker
``idleTimeoutSeconds`` and ``priority``, and the options of features whose gates are off
(historyServerOptions, networkPolicy, tlsOptions, the rocksdb backend); and the
``ray.io/initializing-timeout`` cases of TestValidateRayServiceMetadata. Upstream's
``podTemplateSpec(env, restartPolicy)`` is one container with that env and restart policy.

Where upstream's test turns a gate on (GCSFaultToleranceEmbeddedStorage for the rocksdb rules,
RayClusterNetworkPolicy, RayClusterMTLS, RayClusterHistoryServer), only its gate-off case is
ported: pumice implements none of those features, so the gates stay off.
"""

from __future__ import annotations

from typing import Any

import pytest

from pumice.api import Obj
from pumice.controllers.ray.raycluster import RayClusterReconciler
from pumice.controllers.ray.validation import (
    ValidationError,
    validate_raycluster_spec,
    validate_rayservice_metadata,
)
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample, ray_scheme

ORIGIN = "kuberay ray-operator/controllers/ray/utils/validation_test.go"
V2 = "RAY_enable_autoscaler_v2"


def template(env: list[Obj] | None = None, restart_policy: str | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "ray", "image": "rayproject/ray", **({"env": env} if env else {})}]}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return {"spec": spec}


def group(name: str = "worker-group-1", template_: Obj | None = None, **kw: Any) -> Obj:
    return {"groupName": name, "template": template_ or template(), "minReplicas": 0, "maxReplicas": 5, **kw}


def error_of(spec: Obj, annotations: dict[str, str] | None = None) -> str | None:
    try:
        validate_raycluster_spec(spec, annotations)
    except ValidationError as e:
        return str(e)
    return None


def ft_spec(options: Obj | None, env: list[Obj] | None = None, params: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"headGroupSpec": {"template": template(env), **({"rayStartParams": params} if params else {})}}
    if options is not None:
        spec["gcsFaultToleranceOptions"] = options
    return spec


BOTH_SET = ("ray.io/ft-enabled annotation and GcsFaultToleranceOptions are both set. Please use only "
            "GcsFaultToleranceOptions to configure GCS fault tolerance")
ADDRESS_SET = ("RAY_REDIS_ADDRESS is set which implicitly enables GCS fault tolerance, but GcsFaultToleranceOptions is "
               "not set. Please set GcsFaultToleranceOptions to enable GCS fault tolerance")
ADDRESS = [{"name": "RAY_REDIS_ADDRESS", "value": "redis:6379"}]

GCS_FT_CASES = [
    ("ray.io/ft-enabled is set to false and GcsFaultToleranceOptions is set", {"ray.io/ft-enabled": "false"}, {},
     None, BOTH_SET),
    ("ray.io/ft-enabled is set to true and GcsFaultToleranceOptions is set", {"ray.io/ft-enabled": "true"}, {},
     None, BOTH_SET),
    ("ray.io/ft-enabled is not set and GcsFaultToleranceOptions is set", None, {"redisAddress": "redis:6379"}, None,
     None),
    ("ray.io/ft-enabled is not set and GcsFaultToleranceOptions is not set", None, None, None, None),
    ("ray.io/ft-enabled is set to false and RAY_REDIS_ADDRESS is set", {"ray.io/ft-enabled": "false"}, None, ADDRESS,
     ADDRESS_SET),
    ("gcsFaultToleranceOptions is set and RAY_REDIS_ADDRESS is set", None, {}, ADDRESS,
     "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - use "
     "GcsFaultToleranceOptions.RedisAddress instead"),
    ("FT is disabled and RAY_REDIS_ADDRESS is set", None, None, ADDRESS, ADDRESS_SET),
    ("ray.io/ft-enabled is set to true and RAY_REDIS_ADDRESS is set", {"ray.io/ft-enabled": "true"}, None, ADDRESS,
     None),
    ("gcsFaultToleranceOptions is set and ray.io/external-storage-namespace is set",
     {"ray.io/external-storage-namespace": "myns"}, {"redisAddress": "redis:6379"}, None,
     "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is enabled - use "
     "GcsFaultToleranceOptions.ExternalStorageNamespace instead"),
    ("redis backend without RedisAddress is accepted", None, {"backend": "redis"}, None, None),
    ("redis backend rejects rocksdb-only storage field", None, {"backend": "redis", "storage": {"size": "1Gi"}}, None,
     "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to the 'rocksdb' backend"),
]


@pytest.mark.parametrize(("annotations", "options", "env", "error"), [
    pytest.param(a, o, e, err, id=n, marks=pytest.mark.upstream(
        f"{ORIGIN}: TestValidateRayClusterSpecGcsFaultToleranceOptions/{n}")) for n, a, o, e, err in GCS_FT_CASES])
def test_gcs_fault_tolerance_options(annotations: dict[str, str] | None, options: Obj | None,
                                     env: list[Obj] | None, error: str | None) -> None:
    assert error_of(ft_spec(options, env), annotations) == error


@pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpecEmbeddedGCSFeatureGate")
def test_the_rocksdb_backend_needs_its_feature_gate() -> None:
    assert error_of(ft_spec({"backend": "rocksdb"})) == (
        "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') requires the "
        "GCSFaultToleranceEmbeddedStorage feature gate to be enabled")


@pytest.mark.parametrize(("options", "env", "params", "error"), [
    pytest.param({}, None, {"redis-password": "password"},
                 "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - use "
                 "GcsFaultToleranceOptions.RedisPassword instead", id="redis-password in rayStartParams",
                 marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpecRedisPassword")),
    pytest.param({}, [{"name": "REDIS_PASSWORD", "value": "password"}], None,
                 "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - use "
                 "GcsFaultToleranceOptions.RedisPassword instead", id="REDIS_PASSWORD env",
                 marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpecRedisPassword")),
    pytest.param({"redisAddress": "redis:6379", "redisPassword": {"value": "password"}}, None, None, None,
                 id="RedisPassword option", marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpecRedisPassword")),
    pytest.param(None, None, {"redis-username": "username"},
                 "cannot set redis username in rayStartParams or environment variables - use "
                 "GcsFaultToleranceOptions.RedisUsername instead", id="redis-username in rayStartParams",
                 marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpecRedisUsername")),
    pytest.param(None, [{"name": "REDIS_USERNAME", "value": "username"}], None,
                 "cannot set redis username in rayStartParams or environment variables - use "
                 "GcsFaultToleranceOptions.RedisUsername instead", id="REDIS_USERNAME env",
                 marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpecRedisUsername")),
    pytest.param({"redisAddress": "redis:6379", "redisUsername": {"value": "username"}}, None, None, None,
                 id="RedisUsername option", marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpecRedisUsername")),
])
def test_redis_password_and_username_only_through_the_options(options: Obj | None, env: list[Obj] | None,
                                                               params: dict[str, str] | None, error: str | None) -> None:
    assert error_of(ft_spec(options, env, params)) == error


def autoscaling(version: str | None = None, env: list[Obj] | None = None, head_policy: str | None = None,
                groups: list[Obj] | None = None, **opts: Any) -> Obj:
    spec: Obj = {"enableInTreeAutoscaling": True, "headGroupSpec": {"template": template(env, head_policy)},
                 "workerGroupSpecs": groups or []}
    if version or opts:
        spec["autoscalerOptions"] = {**({"version": version} if version else {}), **opts}
    return spec


GEN = "KUBERAY_GEN_AUTOSCALER_START_CMD"
AUTOSCALER_CASES = [
    ("should return error if autoscaler is enabled and any worker group is suspended",
     autoscaling(groups=[group(suspend=True)]), "worker group worker-group-1 cannot be suspended with Autoscaler enabled"),
    (f"should return error if {V2} env var is set to '1' when autoscaler is disabled",
     {"enableInTreeAutoscaling": False, "headGroupSpec": {"template": template([{"name": V2, "value": "1"}])}},
     f"environment variable {V2} cannot be set to '1' when enableInTreeAutoscaling is false. Please set "
     "enableInTreeAutoscaling: true to use autoscaler v2"),
    (f"should return error if {V2} env var is set to 'true' when autoscaler is disabled",
     {"enableInTreeAutoscaling": False, "headGroupSpec": {"template": template([{"name": V2, "value": "true"}])}},
     f"environment variable {V2} cannot be set to 'true' when enableInTreeAutoscaling is false. Please set "
     "enableInTreeAutoscaling: true to use autoscaler v2"),
    (f"should return error if autoscaler v2 is enabled and head Pod has env var {V2}",
     autoscaling("v2", env=[{"name": V2, "value": "true"}]),
     f"both .spec.autoscalerOptions.version and head Pod env var {V2} are set, please only use the former"),
    ("should return error if autoscaler v2 is enabled and head Pod has a restartPolicy other than Never or unset",
     autoscaling("v2", head_policy="Always"), "restartPolicy for head Pod should be Never or unset when using autoscaler V2"),
    ("should not return error if autoscaler v1 is enabled and a worker group has a restartPolicy other than Never or "
     "unset (warning only)", autoscaling("v1", groups=[group(template_=template(restart_policy="Never")),
                                                        group("worker-group-2", template(restart_policy="Always"))]), None),
    ("should return error if autoscaler v2 is enabled and a worker group has a restartPolicy other than Never or unset",
     autoscaling("v2", head_policy="Never", groups=[group(template_=template(restart_policy="Never")),
                                                    group("worker-group-2", template(restart_policy="Always"))]),
     "restartPolicy for worker group worker-group-2 should be Never or unset when using autoscaler V2"),
    ("should not return error if autoscaler configs are valid",
     autoscaling("v2", groups=[group(), group("worker-group-2", template(restart_policy="Never"))]), None),
    (f"should return error if {GEN} is set in autoscalerOptions.env (args also set)",
     autoscaling() | {"autoscalerOptions": {
         "args": ["my-custom-autoscaler-cmd"], "env": [{"name": GEN, "value": "ray kuberay-autoscaler"}]}},
     f"autoscalerOptions.env must not contain {GEN}: it is managed by KubeRay and injected automatically into the "
     "autoscaler container"),
    (f"should return error if {GEN} is set in autoscalerOptions.env even when autoscalerOptions.args is absent",
     autoscaling() | {"autoscalerOptions": {"env": [{"name": GEN, "value": "ray kuberay-autoscaler"}]}},
     f"autoscalerOptions.env must not contain {GEN}: it is managed by KubeRay and injected automatically into the "
     "autoscaler container"),
]


@pytest.mark.parametrize(("spec", "error"), [
    pytest.param(s, e, id=n, marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpecAutoscaler/{n}"))
    for n, s, e in AUTOSCALER_CASES])
def test_autoscaler(spec: Obj, error: str | None) -> None:
    assert error_of(spec) == error


def with_worker(**kw: Any) -> Obj:
    return {"headGroupSpec": {"template": template()}, "workerGroupSpecs": [group("worker-group", **kw)]}


LABEL_KEY_ERR = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                 "alphanumeric character")
RESOURCE_AND_LABEL_CASES = [
    ("Resources", "Invalid: Head group has resources in both rayStartParams and top-level Resources",
     {"headGroupSpec": {"template": template(), "rayStartParams": {"num-cpus": "1"}, "resources": {"CPU": "1"}}},
     "resource fields should not be set in both rayStartParams and Resources for Head group; please use only one"),
    ("Resources", "Invalid: Worker group has resources in both rayStartParams and .Resources",
     with_worker(rayStartParams={"num-gpus": "1"}, resources={"GPU": "1"}),
     "resource fields should not be set in both rayStartParams and Resources for worker-group group; please use only one"),
    ("Resources", "Valid: Only rayStartParams resources are set for head",
     {"headGroupSpec": {"template": template(), "rayStartParams": {"num-cpus": "2", "memory": "4G",
                                                                    "resources": '{"TPU": "8"}'}}}, None),
    ("Resources", "Valid: Only .Resources field is set for worker",
     with_worker(resources={"CPU": "2", "memory": "4G", "TPU": "8"}), None),
    ("Labels", "Invalid: Head group has 'labels' in rayStartParams",
     {"headGroupSpec": {"template": template(), "rayStartParams": {"labels": "ray.io/node-group=worker-group-1"}}},
     "rayStartParams['labels'] is not supported for Head group; please use the top-level Labels field instead"),
    ("Labels", "Valid: Only .Labels field is set",
     {"headGroupSpec": {"template": template(), "labels": {"ray.io/market-type": "on-demand"}},
      "workerGroupSpecs": [group("worker-group", labels={"ray.io/accelerator-type": "TPU-V6E"})]}, None),
    ("Labels", "Invalid: Label key does not follow Kubernetes syntax", with_worker(labels={"invalid_key!": "value"}),
     f"invalid label key for worker-group group: 'invalid_key!', error: {LABEL_KEY_ERR} (e.g. 'MyName',  or "
     "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("Labels", "Invalid: Label value does not follow Kubernetes syntax",
     {"headGroupSpec": {"template": template(), "labels": {"valid-key": "invalid/value"}}},
     "invalid label value for key 'valid-key' in Head group: 'invalid/value', error: a valid label must be an empty "
     "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
     "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
     "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
]


@pytest.mark.parametrize(("spec", "error"), [
    pytest.param(s, e, id=f"{t}/{n}", marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpec_{t}/{n}"))
    for t, n, s, e in RESOURCE_AND_LABEL_CASES])
def test_group_resources_and_labels(spec: Obj, error: str | None) -> None:
    assert error_of(spec) == error


IDLE_ERR = ("worker group worker-group-1: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please set "
            f".spec.autoscalerOptions.version to 'v2' (or set {V2} environment variable to 'true' in the head pod if "
            "using KubeRay < 1.4.0)")
IDLE_CASES = [
    ("Valid: Worker group with valid idleTimeoutSeconds and v2 spec field",
     autoscaling("v2", groups=[group(idleTimeoutSeconds=60)]), None),
    ("Valid: Worker group with idleTimeoutSeconds and v2 env var",
     autoscaling(env=[{"name": V2, "value": "1"}], groups=[group(idleTimeoutSeconds=60)]), None),
    ("Valid: Worker group with zero idleTimeoutSeconds", autoscaling("v2", groups=[group(idleTimeoutSeconds=0)]), None),
    ("Invalid: Worker group with negative idleTimeoutSeconds", autoscaling("v2", groups=[group(idleTimeoutSeconds=-10)]),
     "worker group worker-group-1: idleTimeoutSeconds must be non-negative, got -10"),
    ("Invalid: Worker group with idleTimeoutSeconds but no autoscaler v2",
     autoscaling(groups=[group(idleTimeoutSeconds=60)]), IDLE_ERR),
    ("Invalid: Worker group with idleTimeoutSeconds but v2 env var set to false",
     autoscaling(env=[{"name": V2, "value": "false"}], groups=[group(idleTimeoutSeconds=60)]), IDLE_ERR),
    ("Valid: AutoscalerOptions with v2 and idleTimeoutSeconds", autoscaling("v2", idleTimeoutSeconds=120), None),
    ("Valid: AutoscalerOptions with v1 and idleTimeoutSeconds", autoscaling("v1", idleTimeoutSeconds=120), None),
    ("Valid: AutoscalerOptions with zero idleTimeoutSeconds", autoscaling(idleTimeoutSeconds=0), None),
    ("Invalid: AutoscalerOptions with negative idleTimeoutSeconds", autoscaling(idleTimeoutSeconds=-10),
     "autoscalerOptions.idleTimeoutSeconds must be non-negative, got -10"),
]


@pytest.mark.parametrize(("spec", "error"), [
    pytest.param(s, e, id=n, marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpec_IdleTimeoutSeconds"))
    for n, s, e in IDLE_CASES])
def test_idle_timeout_seconds(spec: Obj, error: str | None) -> None:
    assert error_of(spec) == error


def prio(version: str | None = "v2", ray: str | None = "2.56.0", env: list[Obj] | None = None, **kw: Any) -> Obj:
    spec = autoscaling(version, env=env, groups=[group(**kw)])
    if ray is not None:
        spec["rayVersion"] = ray
    return spec


PRIORITY_CASES = [
    ("Valid: priority with autoscaler v2 spec field", prio(priority=1), None),
    ("Valid: priority with v2 env var", prio(None, env=[{"name": V2, "value": "1"}], priority=1), None),
    ("Valid: priority 0 without autoscaler v2", prio(None, priority=0), None),
    ("Valid: no priority without autoscaler v2", prio(None), None),
    ("Invalid: priority without autoscaler v2", prio(None, priority=1),
     "worker group worker-group-1: priority is set to 1, but autoscaler v2 is not enabled. Priority is only supported "
     "with autoscaler v2 enabled"),
    ("Invalid: priority with v2 env var set to false", prio(None, env=[{"name": V2, "value": "false"}], priority=2),
     "worker group worker-group-1: priority is set to 2, but autoscaler v2 is not enabled. Priority is only supported "
     "with autoscaler v2 enabled"),
    ("Invalid: priority without RayVersion", prio(ray=None, priority=1),
     "worker group worker-group-1: priority is set, but RayVersion was not specified. Ray version 2.56.0 or later is "
     "required"),
    ("Invalid: priority with an invalid RayVersion", prio(ray="invalid", priority=1),
     'worker group worker-group-1: priority is set, but RayVersion format is invalid: invalid, could not parse '
     '"invalid" as version'),
    ("Invalid: priority with a RayVersion below 2.56.0", prio(ray="2.55.0", priority=1),
     "worker group worker-group-1: priority is set, but minimum Ray version is 2.56.0, got 2.55.0"),
]


@pytest.mark.parametrize(("spec", "error"), [
    pytest.param(s, e, id=n, marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpec_Priority"))
    for n, s, e in PRIORITY_CASES])
def test_priority(spec: Obj, error: str | None) -> None:
    assert error_of(spec) == error


@pytest.mark.parametrize(("field", "value", "error"), [
    pytest.param("networkPolicy", {"mode": "DenyAll"},
                 "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled",
                 marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpec_NetworkPolicyRequiresFeatureGate")),
    pytest.param("tlsOptions", {"enabled": True}, "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled",
                 marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpec_TLSOptionsRequiresFeatureGate")),
    pytest.param("historyServerOptions", {"collectorOptions": {"image": "collector:latest"}},
                 "RayClusterHistoryServer feature gate is not enabled",
                 marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpec_HistoryServerRequiresFeatureGate")),
])
def test_the_options_of_gated_off_features_are_refused(field: str, value: Obj, error: str) -> None:
    assert error_of({"headGroupSpec": {"template": template()}, field: value}) == error


async def test_the_controller_refuses_a_cluster_with_a_gated_off_option_with_upstreams_event() -> None:
    """Was: the option was kept and ignored, the cluster run without the isolation or TLS asked for."""
    client = FakeClient(ray_scheme())
    events: list[tuple[str, str]] = []

    class Rec:
        def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
            events.append((reason, message))

    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["spec"]["networkPolicy"] = {"mode": "DenyAllIngress"}
    await client.create(cl)
    before = len(client.writes())
    await RayClusterReconciler(client, recorder=Rec()).reconcile(Request("default", "raycluster-kuberay"))
    assert events == [("InvalidRayClusterSpec", "The RayCluster spec is invalid default/raycluster-kuberay: "
                       "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled")]
    assert client.writes()[before:] == []


@pytest.mark.parametrize(("value", "error"), [
    ("5m", None), ("300", None), ("", None),
    ("0", "annotation ray.io/initializing-timeout must be a positive duration, got: 0"),
    ("-100", "annotation ray.io/initializing-timeout must be a positive integer (seconds), got: -100"),
    ("-5m", "annotation ray.io/initializing-timeout must be a positive duration, got: -5m"),
    ("invalid", "annotation ray.io/initializing-timeout has invalid format: invalid. Expected Go duration format "
                "(e.g., '5m', '1h') or positive integer seconds"),
], ids=["5m", "300", "empty", "0", "-100", "-5m", "invalid"])
@pytest.mark.upstream(f"{ORIGIN}: TestValidateRayServiceMetadata (initializing timeout)")
def test_the_initializing_timeout_annotation(value: str, error: str | None) -> None:
    rs = {"metadata": {"name": "valid-service", "annotations": {"ray.io/initializing-timeout": value}}}
    if error is None:
        validate_rayservice_metadata(rs)
        return
    with pytest.raises(ValidationError) as e:
        validate_rayservice_metadata(rs)
    assert str(e.value) == f"The RayService metadata is invalid: RayService annotations is invalid: {error}"
