"""Spec validation the controllers perform before acting (invalid → event / ValidationFailed,
nothing created).

Mirrors: kuberay ray-operator/controllers/ray/utils/validation.go (ValidateRayClusterSpec,
ValidateRayJobMetadata, ValidateRayJobSpec, ValidateRayJobStatus), the subset that applies to
the features pumice implements.
"""

from __future__ import annotations

import re

import yaml

from pumice._util.duration import parse_go_duration
from pumice._util.gostrings import quote as go_quote
from pumice.api import Obj, yamlsafe
from pumice.api.ray.constants import RayClusterUpgradeType
from pumice.api.validation import is_dns1035_label, is_label_value, is_qualified_name
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.common import pod as podb
from pumice.controllers.ray.common.resources import is_autoscaling_enabled


class ValidationError(ValueError):
    """The object is invalid; the message says why.

    Attributes:
        reason: the Event reason the controller records (for a RayJob: InvalidRayJobMetadata,
            InvalidRayJobSpec or InvalidRayJobStatus; empty where the caller picks one).
    """

    reason: str = ""


#: Environment variable names the checks read (utils/constant.go).
RAY_ENABLE_AUTOSCALER_V2 = "RAY_enable_autoscaler_v2"
KUBERAY_GEN_AUTOSCALER_START_CMD = "KUBERAY_GEN_AUTOSCALER_START_CMD"
RAY_REDIS_ADDRESS = "RAY_REDIS_ADDRESS"
REDIS_PASSWORD = "REDIS_PASSWORD"
REDIS_USERNAME = "REDIS_USERNAME"

#: KubeRay's alpha feature gates (pkg/features/features.go), all off by default and not
#: implemented by pumice, so always off here: a RayCluster using one is refused with upstream's
#: text, as the operator refuses it with its default gates.
GATED_OFF = ("RayClusterHistoryServer", "RayClusterNetworkPolicy", "RayClusterMTLS",
             "GCSFaultToleranceEmbeddedStorage")


def _env(container: Obj) -> list[Obj]:
    return [e for e in container.get("env") or [] if isinstance(e, dict)]


def _env_value(container: Obj, name: str) -> str | None:
    """The ``value`` of env var ``name`` (``""`` when it has none), or None when it is absent."""
    return next((str(e.get("value") or "") for e in _env(container) if e.get("name") == name), None)


def _validate_group_resources(group: str, params: dict[str, str], resources: dict[str, str] | None) -> None:
    if any(params.get(k) for k in ("num-cpus", "num-gpus", "memory", "resources")) and resources:
        raise ValidationError(f"resource fields should not be set in both rayStartParams and Resources for {group} "
                              "group; please use only one")


def _validate_group_labels(group: str, params: dict[str, str], labels: dict[str, str] | None) -> None:
    """Deviates: the errors are listed by label key (upstream walks a Go map: any order)."""
    if "labels" in params:
        raise ValidationError(f"rayStartParams['labels'] is not supported for {group} group; please use the top-level "
                              "Labels field instead")
    errs: list[str] = []
    for key, val in sorted((labels or {}).items()):
        errs += [f"invalid label key for {group} group: '{key}', error: {e}" for e in is_qualified_name(key)]
        errs += [f"invalid label value for key '{key}' in {group} group: '{val}', error: {e}"
                 for e in is_label_value(str(val))]
    if errs:
        raise ValidationError("; ".join(errs))


def _autoscaler_v2_by_env(head_container: Obj) -> bool:
    return _env_value(head_container, RAY_ENABLE_AUTOSCALER_V2) in ("1", "true")


def _validate_idle_timeout(g: Obj, spec: Obj, head_container: Obj) -> None:
    idle = g.get("idleTimeoutSeconds")
    if idle is None:
        return
    gname = g.get("groupName", "")
    if int(idle) < 0:
        raise ValidationError(f"worker group {gname}: idleTimeoutSeconds must be non-negative, got {idle}")
    if _autoscaler_v2(spec) or _autoscaler_v2_by_env(head_container):
        return
    raise ValidationError(f"worker group {gname}: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please "
                          f"set .spec.autoscalerOptions.version to 'v2' (or set {RAY_ENABLE_AUTOSCALER_V2} environment "
                          "variable to 'true' in the head pod if using KubeRay < 1.4.0)")


def _validate_priority(g: Obj, spec: Obj, head_container: Obj) -> None:
    priority = g.get("priority")
    if not priority:
        return
    gname = g.get("groupName", "")
    ray_version = str(spec.get("rayVersion") or "")
    if not ray_version:
        raise ValidationError(f"worker group {gname}: priority is set, but RayVersion was not specified. Ray version "
                              "2.56.0 or later is required")
    try:
        parsed = parse_generic_version(ray_version)
    except ValueError as e:
        raise ValidationError(f"worker group {gname}: priority is set, but RayVersion format is invalid: {ray_version}, "
                              f"{e}") from e
    if version_less_than(parsed, (2, 56, 0)):
        raise ValidationError(f"worker group {gname}: priority is set, but minimum Ray version is 2.56.0, got "
                              f"{ray_version}")
    if _autoscaler_v2(spec) or _autoscaler_v2_by_env(head_container):
        return
    raise ValidationError(f"worker group {gname}: priority is set to {priority}, but autoscaler v2 is not enabled. "
                          "Priority is only supported with autoscaler v2 enabled")


def _autoscaler_v2(spec: Obj) -> bool:
    return str((spec.get("autoscalerOptions") or {}).get("version") or "") == "v2"


def _validate_gcs_ft(spec: Obj, annotations: dict[str, str], head: Obj, head_container: Obj) -> None:
    """The GCS fault tolerance rules of ValidateRayClusterSpec and validateGcsFaultToleranceBackend
    (the rocksdb backend: refused, its feature gate being off)."""
    params = head.get("rayStartParams") or {}
    ft_annotation = annotations.get(c.RAY_FT_ENABLED_ANNOTATION_KEY)
    options = spec.get("gcsFaultToleranceOptions")
    if ft_annotation and options is not None:
        raise ValidationError(f"{c.RAY_FT_ENABLED_ANNOTATION_KEY} annotation and GcsFaultToleranceOptions are both set. "
                              "Please use only GcsFaultToleranceOptions to configure GCS fault tolerance")
    ft_enabled = (ft_annotation is not None and ft_annotation.lower() == "true") or options is not None
    if not ft_enabled and _env_value(head_container, RAY_REDIS_ADDRESS) is not None:
        raise ValidationError(f"{RAY_REDIS_ADDRESS} is set which implicitly enables GCS fault tolerance, but "
                              "GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions to enable GCS "
                              "fault tolerance")
    if options is not None:
        if params.get("redis-password"):
            raise ValidationError("cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is "
                                  "enabled - use GcsFaultToleranceOptions.RedisPassword instead")
        if _env_value(head_container, REDIS_PASSWORD) is not None:
            raise ValidationError("cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is "
                                  "enabled - use GcsFaultToleranceOptions.RedisPassword instead")
        if _env_value(head_container, RAY_REDIS_ADDRESS) is not None:
            raise ValidationError("cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is "
                                  "enabled - use GcsFaultToleranceOptions.RedisAddress instead")
        if annotations.get(c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY):
            raise ValidationError("cannot set `ray.io/external-storage-namespace` annotation when "
                                  "GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions."
                                  "ExternalStorageNamespace instead")
        if str((options or {}).get("backend") or "redis") == "rocksdb":
            raise ValidationError("the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: "
                                  "'rocksdb') requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled")
        if (options or {}).get("storage") is not None:
            raise ValidationError("cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only "
                                  "applies to the 'rocksdb' backend")
    if params.get("redis-username") or _env_value(head_container, REDIS_USERNAME) is not None:
        raise ValidationError("cannot set redis username in rayStartParams or environment variables - use "
                              "GcsFaultToleranceOptions.RedisUsername instead")


def _validate_autoscaler(spec: Obj, head: Obj, head_container: Obj) -> None:
    autoscaling = is_autoscaling_enabled(spec)
    if not autoscaling:
        value = _env_value(head_container, RAY_ENABLE_AUTOSCALER_V2)
        if value in ("1", "true"):
            raise ValidationError(f"environment variable {RAY_ENABLE_AUTOSCALER_V2} cannot be set to '{value}' when "
                                  "enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true to use "
                                  "autoscaler v2")
    opts = spec.get("autoscalerOptions") or {}
    if autoscaling:
        for g in spec.get("workerGroupSpecs") or []:
            if g.get("suspend"):
                raise ValidationError(f"worker group {g.get('groupName', '')} cannot be suspended with Autoscaler "
                                      "enabled")
        if opts.get("version") and _env_value(head_container, RAY_ENABLE_AUTOSCALER_V2) is not None:
            raise ValidationError(f"both .spec.autoscalerOptions.version and head Pod env var {RAY_ENABLE_AUTOSCALER_V2} "
                                  "are set, please only use the former")
        if _autoscaler_v2(spec):
            policy = ((head.get("template") or {}).get("spec") or {}).get("restartPolicy") or ""
            if policy not in ("", "Never"):
                raise ValidationError("restartPolicy for head Pod should be Never or unset when using autoscaler V2")
            for g in spec.get("workerGroupSpecs") or []:
                if (((g.get("template") or {}).get("spec") or {}).get("restartPolicy") or "") not in ("", "Never"):
                    raise ValidationError(f"restartPolicy for worker group {g.get('groupName', '')} should be Never "
                                          "or unset when using autoscaler V2")
    idle = opts.get("idleTimeoutSeconds")
    if idle is not None and int(idle) < 0:
        raise ValidationError(f"autoscalerOptions.idleTimeoutSeconds must be non-negative, got {idle}")
    if any(e.get("name") == KUBERAY_GEN_AUTOSCALER_START_CMD for e in opts.get("env") or [] if isinstance(e, dict)):
        raise ValidationError(f"autoscalerOptions.env must not contain {KUBERAY_GEN_AUTOSCALER_START_CMD}: it is "
                              "managed by KubeRay and injected automatically into the autoscaler container")


def validate_raycluster_spec(spec: Obj, annotations: dict[str, str] | None = None) -> None:
    """Upstream's checks, in its order, first failure raised: containers in every template; the
    head's and each group's ``resources``/``labels`` (not both in rayStartParams; label keys and
    values valid); replica bounds; ``idleTimeoutSeconds`` and ``priority`` only with autoscaler v2
    (priority from Ray 2.56.0); GCS fault tolerance (annotation vs options, Redis address,
    password and username only through the options, no ``rocksdb`` backend and no ``storage``);
    autoscaler (no suspended group, v2 env var only with autoscaling, restartPolicy Never or unset
    under v2, no negative idle timeout, no ``KUBERAY_GEN_AUTOSCALER_START_CMD``); the
    ``historyServerOptions``, ``networkPolicy`` and ``tlsOptions`` of features whose gates are off;
    token auth.

    Raises:
        ValidationError: with upstream's text.

    Mirrors: utils/validation.go ValidateRayClusterSpec with the default feature gates
    (RayJobDeletionPolicy on; the alpha gates of :data:`GATED_OFF` off)."""
    annotations = annotations or {}
    head = spec.get("headGroupSpec") or {}
    head_containers = ((head.get("template") or {}).get("spec") or {}).get("containers") or []
    if not head_containers:
        raise ValidationError("headGroupSpec should have at least one container")
    head_container = head_containers[0] if isinstance(head_containers[0], dict) else {}
    head_params = head.get("rayStartParams") or {}
    _validate_group_resources("Head", head_params, head.get("resources"))
    _validate_group_labels("Head", head_params, head.get("labels"))
    autoscaling = is_autoscaling_enabled(spec)
    for g in spec.get("workerGroupSpecs") or []:
        gname = g.get("groupName", "")
        if not ((g.get("template") or {}).get("spec") or {}).get("containers"):
            raise ValidationError("workerGroupSpec should have at least one container")
        mn, mx = g.get("minReplicas"), g.get("maxReplicas")
        if not autoscaling and (mn is None or mx is None):
            # The CRD defaults both (0 and MaxInt32), so only a spec that skipped the API server
            # (or removed them) gets here.
            raise ValidationError(f"worker group {gname} must set both minReplicas and maxReplicas when autoscaling is "
                                  "disabled")
        if mn is not None and int(mn) < 0:
            raise ValidationError(f"worker group {gname} has negative minReplicas {mn}")
        if mx is not None and int(mx) < 0:
            raise ValidationError(f"worker group {gname} has negative maxReplicas {mx}")
        if mn is not None and mx is not None and int(mn) > int(mx):
            raise ValidationError(f"worker group {gname} has minReplicas {mn} greater than maxReplicas {mx}")
        params = g.get("rayStartParams") or {}
        _validate_group_resources(gname, params, g.get("resources"))
        _validate_group_labels(gname, params, g.get("labels"))
        _validate_idle_timeout(g, spec, head_container)
        _validate_priority(g, spec, head_container)
    _validate_gcs_ft(spec, annotations, head, head_container)
    _validate_autoscaler(spec, head, head_container)
    if spec.get("historyServerOptions") is not None:
        raise ValidationError("RayClusterHistoryServer feature gate is not enabled")
    _validate_auth_options(spec)
    if spec.get("networkPolicy") is not None:
        raise ValidationError("spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled")
    if spec.get("tlsOptions") is not None:
        raise ValidationError("spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled")


_GO_VERSION = re.compile(r"^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)\Z")
_MAX_UINT64 = 2**64 - 1


def parse_generic_version(text: str) -> tuple[int, ...]:
    """The numeric components of a version string as k8s.io/apimachinery's
    ``version.ParseGeneric`` reads it: optional leading blanks and ``v``, at least two
    dot-separated numbers, anything after them ignored (``2.52.0``, ``v2.52``, ``2.52.0rc1``).

    Raises:
        ValueError: with Go's text (``could not parse "X" as version``, ``illegal version string
            "X"``, ``illegal zero-prefixed version component ...``)."""
    m = _GO_VERSION.match(text)
    if m is None:
        raise ValueError(f"could not parse {go_quote(text)} as version")
    comps = m.group(1).split(".")
    if len(comps) < 2:
        raise ValueError(f"illegal version string {go_quote(text)}")
    if comps[0].startswith("0") and comps[0] != "0":
        raise ValueError(f"illegal zero-prefixed version component {go_quote(comps[0])} in {go_quote(text)}")
    out = tuple(int(x) for x in comps)
    for comp, n in zip(comps, out, strict=True):
        if n > _MAX_UINT64:
            raise ValueError(f"illegal non-numeric version component {go_quote(comp)} in {go_quote(text)}: "
                             f"strconv.ParseUint: parsing {go_quote(comp)}: value out of range")
    return out


def version_less_than(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """``Version.LessThan`` for generic versions: missing components count as 0."""
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)) < b + (0,) * (n - len(b))


def _validate_auth_options(spec: Obj) -> None:
    """``authOptions``: token mode needs ``rayVersion`` >= 2.52.0; Kubernetes token auth needs
    token mode, >= 2.55.0 and no ``secretName``.

    Mirrors: utils/validation.go ValidateRayClusterSpec (the IsAuthEnabled block)."""
    opts = spec.get("authOptions") or {}
    if not podb.is_auth_enabled(spec):
        if podb.is_k8s_auth_enabled(opts):
            raise ValidationError("authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'")
        return
    ray_version = str(spec.get("rayVersion") or "")
    if not ray_version:
        raise ValidationError("authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or "
                              "later is required")
    try:
        parsed = parse_generic_version(ray_version)
    except ValueError as e:
        raise ValidationError(f"authOptions.mode is 'token' but RayVersion format is invalid: {ray_version}, {e}") from e
    if version_less_than(parsed, (2, 52, 0)):
        raise ValidationError(f"authOptions.mode is 'token' but minimum Ray version is 2.52.0, got {ray_version}")
    if podb.is_k8s_auth_enabled(opts):
        if version_less_than(parsed, (2, 55, 0)):
            raise ValidationError("authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got "
                                  f"{ray_version}")
        if opts.get("secretName"):
            raise ValidationError("authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set")


#: Event reasons of a RayCluster the operator refuses (utils/constant.go)
INVALID_RAYCLUSTER_METADATA = "InvalidRayClusterMetadata"
INVALID_RAYCLUSTER_SPEC = "InvalidRayClusterSpec"


def validate_raycluster(cluster: Obj) -> None:
    """The RayCluster controller's checks before it reconciles: metadata, then spec.

    Raises:
        ValidationError: ``reason`` InvalidRayClusterMetadata or InvalidRayClusterSpec, and
            upstream's Event text ``The RayCluster metadata|spec is invalid <ns>/<name>: <why>``.

    Mirrors: raycluster_controller.go rayClusterReconcile (ValidateRayClusterMetadata,
    ValidateRayClusterSpec)."""
    meta = cluster.get("metadata") or {}
    where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    name = meta.get("name", "")
    why = ""
    if len(name) > c.MAX_RAYCLUSTER_NAME_LENGTH:
        why = f"RayCluster name should be no more than {c.MAX_RAYCLUSTER_NAME_LENGTH} characters"
    elif errs := is_dns1035_label(name):
        why = f"RayCluster name should be a valid DNS1035 label: [{' '.join(errs)}]"
    if why:
        e = ValidationError(f"The RayCluster metadata is invalid {where}: {why}")
        e.reason = INVALID_RAYCLUSTER_METADATA
        raise e
    try:
        validate_raycluster_spec(cluster.get("spec") or {}, meta.get("annotations") or {})
    except ValidationError as err:
        e = ValidationError(f"The RayCluster spec is invalid {where}: {err}")
        e.reason = INVALID_RAYCLUSTER_SPEC
        raise e from err


INVALID_RAYCLUSTER_STATUS = "InvalidRayClusterStatus"


def validate_raycluster_status(cluster: Obj) -> None:
    """A RayCluster's status may not have RayClusterSuspending and RayClusterSuspended both True.

    Raises:
        ValidationError: ``reason`` InvalidRayClusterStatus, upstream's Event text ``The RayCluster
            status is invalid <ns>/<name>, <why>`` (a comma, as upstream's format has it).

    Mirrors: utils/validation.go ValidateRayClusterStatus; raycluster_controller.go rayClusterReconcile."""
    conds = {cd.get("type"): cd.get("status") for cd in (cluster.get("status") or {}).get("conditions") or []
             if isinstance(cd, dict)}
    if conds.get(c.RayClusterConditionType.RAY_CLUSTER_SUSPENDING) == "True" and \
            conds.get(c.RayClusterConditionType.RAY_CLUSTER_SUSPENDED) == "True":
        meta = cluster.get("metadata") or {}
        e = ValidationError(f"The RayCluster status is invalid {meta.get('namespace', '')}/{meta.get('name', '')}, "
                            "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended "
                            "conditions should not be both true")
        e.reason = INVALID_RAYCLUSTER_STATUS
        raise e


def validate_raycluster_upgrade_options(cluster: Obj) -> None:
    """``spec.upgradeStrategy.type`` is ``Recreate`` or ``None``, and is set only on a RayCluster a
    user created (not on one a RayJob or RayService made).

    Raises:
        ValidationError: with upstream's text.

    Mirrors: utils/validation.go ValidateRayClusterUpgradeOptions."""
    utype = ((cluster.get("spec") or {}).get("upgradeStrategy") or {}).get("type")
    if utype is None:
        return
    valid = (RayClusterUpgradeType.RECREATE.value, RayClusterUpgradeType.NONE.value)
    if utype not in valid:
        raise ValidationError(f"The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value {utype} is invalid, "
                              f"valid options are {valid[0]} or {valid[1]}")
    creator = ((cluster.get("metadata") or {}).get("labels") or {}).get(c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY)
    if creator in (c.CRDType.RAY_JOB, c.CRDType.RAY_SERVICE):
        raise ValidationError(f"upgradeStrategy cannot be set when RayCluster is created by {creator}")


INVALID_RAYJOB_METADATA = "InvalidRayJobMetadata"
INVALID_RAYJOB_SPEC = "InvalidRayJobSpec"
INVALID_RAYJOB_STATUS = "InvalidRayJobStatus"

_SPEC = "The RayJob spec is invalid: "


def validate_rayjob(rayjob: Obj) -> None:
    """Metadata, then spec, then status, as upstream's validateRayJob; the first failure wins.

    Raises:
        ValidationError: with ``reason`` InvalidRayJobMetadata, InvalidRayJobSpec or
            InvalidRayJobStatus (the Event reason upstream records) and upstream's message.

    Mirrors: rayjob_controller.go validateRayJob."""
    for check, reason in ((lambda: validate_rayjob_metadata(rayjob.get("metadata") or {}), INVALID_RAYJOB_METADATA),
                          (lambda: validate_rayjob_spec(rayjob), INVALID_RAYJOB_SPEC),
                          (lambda: validate_rayjob_status(rayjob), INVALID_RAYJOB_STATUS)):
        try:
            check()
        except ValidationError as e:
            e.reason = reason
            raise


def validate_rayjob_metadata(meta: Obj) -> None:
    """Raises:
        ValidationError: name too long or not a DNS-1035 label.

    Mirrors: utils/validation.go ValidateRayJobMetadata."""
    name = meta.get("name", "")
    if len(name) > c.MAX_RAYJOB_NAME_LENGTH:
        raise ValidationError("The RayJob metadata is invalid: RayJob name should be no more than "
                              f"{c.MAX_RAYJOB_NAME_LENGTH} characters")
    if errs := is_dns1035_label(name):
        raise ValidationError(f"The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: "
                              f"[{' '.join(errs)}]")


def validate_rayjob_status(rayjob: Obj) -> None:
    """Raises:
        ValidationError: Waiting outside InteractiveMode.

    Mirrors: utils/validation.go ValidateRayJobStatus."""
    mode = (rayjob.get("spec") or {}).get("submissionMode") or c.JobSubmissionMode.K8S_JOB_MODE
    status = rayjob.get("status") or {}
    if status.get("jobDeploymentStatus") == c.JobDeploymentStatus.WAITING and mode != c.JobSubmissionMode.INTERACTIVE_MODE:
        raise ValidationError("The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when "
                              "SubmissionMode is not InteractiveMode")


def validate_rayjob_spec(rayjob: Obj) -> None:
    """The rules in upstream's order, with its messages (the first failure is reported).

    Raises:
        ValidationError: the first rule the spec breaks.

    Mirrors: utils/validation.go ValidateRayJobSpec and validateDeletionConfiguration (with the
    RayJobDeletionPolicy feature gate taken as enabled: pumice serves deletionStrategy). pumice
    adds one rule upstream leaves to the CRD's enum: an unknown submissionMode.
    """
    spec = rayjob.get("spec") or {}
    mode = spec.get("submissionMode") or c.JobSubmissionMode.K8S_JOB_MODE
    if mode not in {m.value for m in c.JobSubmissionMode}:
        raise ValidationError(f"{_SPEC}unknown submissionMode {mode!r}")
    shutdown = bool(spec.get("shutdownAfterJobFinishes"))
    if spec.get("suspend") and not shutdown:
        raise ValidationError(f"{_SPEC}a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended")
    if int(spec.get("ttlSecondsAfterFinished") or 0) < 0:
        raise ValidationError(f"{_SPEC}TTLSecondsAfterFinished must be a non-negative integer")
    _validate_deletion_configuration(spec)
    selector = spec.get("clusterSelector") or {}
    cluster_spec = spec.get("rayClusterSpec")
    backoff = spec.get("backoffLimit")
    if spec.get("suspend") and selector:
        raise ValidationError(f"{_SPEC}the ClusterSelector mode doesn't support the suspend operation")
    if cluster_spec is None and not selector:
        raise ValidationError(f"{_SPEC}one of RayClusterSpec or ClusterSelector must be set")
    if selector:
        if not selector.get(c.RAY_CLUSTER_LABEL_KEY):
            raise ValidationError("cluster name in ClusterSelector should not be empty")
        if mode == c.JobSubmissionMode.SIDECAR_MODE:
            raise ValidationError("ClusterSelector is not supported in SidecarMode")
        if backoff is not None and int(backoff) > 0:
            raise ValidationError(f"{_SPEC}BackoffLimit is incompatible with ClusterSelector mode")
    if mode == c.JobSubmissionMode.INTERACTIVE_MODE and backoff is not None and int(backoff) > 0:
        raise ValidationError(f"{_SPEC}BackoffLimit is incompatible with InteractiveMode")
    if mode == c.JobSubmissionMode.SIDECAR_MODE:
        if spec.get("submitterPodTemplate") is not None:
            raise ValidationError("Currently, SidecarMode doesn't support SubmitterPodTemplate")
        if spec.get("submitterConfig") is not None:
            raise ValidationError("Currently, SidecarMode doesn't support SubmitterConfig")
        rp = ((cluster_spec or {}).get("headGroupSpec", {}).get("template", {}).get("spec") or {}).get("restartPolicy")
        if rp not in (None, "", "Never"):
            raise ValidationError("restartPolicy for head Pod should be Never or unset when using SidecarMode")
    if cluster_spec is not None:
        if podb.is_k8s_auth_enabled(cluster_spec.get("authOptions")):
            raise ValidationError(f"{_SPEC}K8s token auth mode is currently not supported for RayJob")
        try:
            validate_raycluster_spec(cluster_spec, (rayjob.get("metadata") or {}).get("annotations") or {})
        except ValidationError as e:
            raise ValidationError(f"{_SPEC}{e}") from None
    if spec.get("runtimeEnvYAML"):
        try:
            yamlsafe.safe_load(spec["runtimeEnvYAML"])
        except yaml.YAMLError as e:
            raise ValidationError(f"failed to unmarshal RuntimeEnvYAML: {spec['runtimeEnvYAML']}: {e}") from e
    for field_name in ("activeDeadlineSeconds", "preRunningDeadlineSeconds"):
        v = spec.get(field_name)
        if v is not None and int(v) <= 0:
            raise ValidationError(f"{_SPEC}{field_name} must be a positive integer")
    if backoff is not None and int(backoff) < 0:
        raise ValidationError(f"{_SPEC}backoffLimit must be a positive integer")


def _validate_deletion_configuration(spec: Obj) -> None:
    """Mirrors: utils/validation.go validateDeletionConfiguration."""
    shutdown = bool(spec.get("shutdownAfterJobFinishes"))
    if not shutdown and int(spec.get("ttlSecondsAfterFinished") or 0) > 0:
        raise ValidationError(f"{_SPEC}a RayJob with shutdownAfterJobFinishes set to false cannot have "
                              "TTLSecondsAfterFinished")
    strategy = spec.get("deletionStrategy")
    if strategy is None:
        return
    legacy = strategy.get("onSuccess") is not None or strategy.get("onFailure") is not None
    rules = bool(strategy.get("deletionRules"))
    if rules and shutdown:
        raise ValidationError(f"{_SPEC}spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are "
                              "mutually exclusive")
    if rules and legacy:
        raise ValidationError(f"{_SPEC}Cannot use both legacy onSuccess/onFailure fields and deletionRules "
                              "simultaneously")
    if legacy:
        _validate_legacy_deletion_policies(spec, strategy)
    elif rules:
        _validate_deletion_rules(spec, strategy["deletionRules"])
    else:
        raise ValidationError(f"{_SPEC}DeletionStrategy requires either BOTH onSuccess and onFailure, OR the "
                              "deletionRules field (cannot be empty)")


_DELETION_ORDER = ("DeleteWorkers", "DeleteCluster", "DeleteSelf")
"""Deletion policies in the order their TTLs must not decrease (workers first, the RayJob last)."""


def _validate_deletion_rules(spec: Obj, rules: list[Obj]) -> None:
    """Every rule's problems, joined one per line (upstream's errors.Join).

    Mirrors: utils/validation.go validateDeletionRules, validateDeletionCondition and
    validateTTLConsistency (whose per-condition pass walks a Go map; here in sorted order)."""
    selector_mode = bool(spec.get("clusterSelector"))
    autoscaling = is_autoscaling_enabled(spec.get("rayClusterSpec") or {})
    policies = {p.value for p in c.DeletionPolicyType}
    by_condition: dict[tuple[str, str], dict[str, int]] = {}
    errs: list[str] = []
    for i, rule in enumerate(rules):
        cond = rule.get("condition") or {}
        js, jds = cond.get("jobStatus"), cond.get("jobDeploymentStatus")
        policy = rule.get("policy")
        if js is not None and jds is not None:
            errs.append(f"deletionRules[{i}]: cannot set both JobStatus and JobDeploymentStatus at the same time")
            continue
        if js is None and jds is None:
            errs.append(f"deletionRules[{i}]: exactly one of JobStatus and JobDeploymentStatus must be set")
            continue
        if int(cond.get("ttlSeconds") or 0) < 0:
            errs.append(f"deletionRules[{i}]: TTLSeconds must be non-negative")
            continue
        if policy not in policies:  # the CRD's enum refuses it before upstream's controller sees it
            errs.append(f"deletionRules[{i}]: unknown DeletionPolicyType '{policy}'")
            continue
        if selector_mode and policy in ("DeleteCluster", "DeleteWorkers"):
            errs.append(f"deletionRules[{i}]: DeletionPolicyType '{policy}' not supported when ClusterSelector is set")
            continue
        if autoscaling and policy == "DeleteWorkers":
            errs.append(f"deletionRules[{i}]: DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled")
            continue
        key = ("JobStatus", str(js)) if js is not None else ("JobDeploymentStatus", str(jds))
        ttls = by_condition.setdefault(key, {})
        if policy in ttls:
            errs.append(f"deletionRules[{i}]: duplicate rule for DeletionPolicyType '{policy}' and {key[0]} '{key[1]}'")
            continue
        ttls[policy] = int(cond.get("ttlSeconds") or 0)
    for (kind, value), ttls in sorted(by_condition.items()):
        prev: tuple[str, int] | None = None
        for policy in _DELETION_ORDER:
            if policy not in ttls:
                continue
            if prev is not None and ttls[policy] < prev[1]:
                errs.append(f"for {kind} '{value}': {policy} TTL ({ttls[policy]}) must be >= {prev[0]} TTL ({prev[1]})")
            prev = (policy, ttls[policy])
    if errs:
        raise ValidationError("\n".join(errs))


def _validate_legacy_deletion_policies(spec: Obj, strategy: Obj) -> None:
    """Mirrors: utils/validation.go validateLegacyDeletionPolicies."""
    on_success, on_failure = strategy.get("onSuccess"), strategy.get("onFailure")
    if on_success is None or on_failure is None:
        raise ValidationError("both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using "
                              "the legacy deletion policy fields of DeletionStrategy")
    success, failure = on_success.get("policy"), on_failure.get("policy")
    if success is None:
        raise ValidationError("the DeletionPolicyType field of DeletionStrategy.OnSuccess cannot be unset when "
                              "DeletionStrategy is enabled")
    if failure is None:
        raise ValidationError("the DeletionPolicyType field of DeletionStrategy.OnFailure cannot be unset when "
                              "DeletionStrategy is enabled")
    policies = {p.value for p in c.DeletionPolicyType}
    for which, pol in (("onSuccess", success), ("onFailure", failure)):
        if pol not in policies:  # the CRD's enum refuses it before upstream's controller sees it
            raise ValidationError(f"the {which} policy {pol!r} is not a deletion policy")
    if spec.get("clusterSelector"):
        for pol, when in ((success, "success"), (failure, "failure")):
            if pol in ("DeleteCluster", "DeleteWorkers"):
                raise ValidationError(f"the ClusterSelector mode doesn't support DeletionStrategy={pol} on {when}")
    if "DeleteWorkers" in (success, failure) and is_autoscaling_enabled(spec.get("rayClusterSpec") or {}):
        raise ValidationError("DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling "
                              "enabled")
    if spec.get("shutdownAfterJobFinishes") and "DeleteNone" in (success, failure):
        raise ValidationError(f"{_SPEC}shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'")


MAX_RAYSERVICE_NAME_LENGTH = c.MAX_RAYCLUSTER_NAME_LENGTH - 6
_UPGRADE_TYPES = ("NewClusterWithIncrementalUpgrade", "NewCluster", "None")


_GO_ATOI = re.compile(r"^[+-]?[0-9]+\Z")


def initializing_timeout_seconds(annotations: dict[str, str]) -> float | None:
    """The ``ray.io/initializing-timeout`` annotation in seconds, None when absent or empty: a Go
    duration (``5m``, ``1h``) first, else integer seconds (Go ``strconv.Atoi``).

    Raises:
        ValidationError: not positive, or neither form, with upstream's texts.

    Mirrors: utils/validation.go validateInitializingTimeout."""
    key = c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION
    raw = annotations.get(key)
    if not raw:
        return None
    try:
        secs = parse_go_duration(raw)
    except ValueError:
        pass
    else:
        if secs <= 0:
            raise ValidationError(f"annotation {key} must be a positive duration, got: {raw}")
        return secs
    if _GO_ATOI.match(raw) and -(2**63) <= int(raw) < 2**63:
        if int(raw) <= 0:
            raise ValidationError(f"annotation {key} must be a positive integer (seconds), got: {raw}")
        return float(int(raw))
    raise ValidationError(f"annotation {key} has invalid format: {raw}. Expected Go duration format (e.g., '5m', "
                          "'1h') or positive integer seconds")


def validate_rayservice_metadata(rayservice: Obj) -> None:
    """Raises:
        ValidationError: name too long or not DNS-1035; bad initializing-timeout annotation.

    Mirrors: utils/validation.go ValidateRayServiceMetadata."""
    meta = rayservice.get("metadata") or {}
    name = meta.get("name", "")
    if len(name) > MAX_RAYSERVICE_NAME_LENGTH:
        raise ValidationError("The RayService metadata is invalid: RayService name should be no more than "
                              f"{MAX_RAYSERVICE_NAME_LENGTH} characters")
    if errs := is_dns1035_label(name):
        raise ValidationError("The RayService metadata is invalid: RayService name should be a valid DNS1035 "
                              f"label: [{' '.join(errs)}]")
    try:
        initializing_timeout_seconds(meta.get("annotations") or {})
    except ValidationError as e:
        raise ValidationError(f"The RayService metadata is invalid: RayService annotations is invalid: {e}") from e


def validate_rayservice_spec(rayservice: Obj) -> None:
    """Raises:
        ValidationError: the first failing rule of kuberay-2.md §11.6 (messages start with "The
            RayService spec is invalid").

    Mirrors: utils/validation.go ValidateRayServiceSpec. The incremental-upgrade options are checked
    only for their presence rules; pumice runs NewClusterWithIncrementalUpgrade as the gate-off
    case (zero-downtime disabled)."""
    spec = rayservice.get("spec") or {}
    cluster_spec = spec.get("rayClusterConfig") or {}
    prefix = "The RayService spec is invalid"
    if podb.is_k8s_auth_enabled(cluster_spec.get("authOptions")):
        raise ValidationError(f"{prefix}: K8s token auth mode is currently not supported for RayService")
    try:
        validate_raycluster_spec(cluster_spec, (rayservice.get("metadata") or {}).get("annotations") or {})
    except ValidationError as e:
        raise ValidationError(f"{prefix}: {e}") from e
    head_svc = (cluster_spec.get("headGroupSpec") or {}).get("headService") or {}
    if (head_svc.get("metadata") or {}).get("name"):
        raise ValidationError(f"{prefix}: spec.rayClusterConfig.headGroupSpec.headService.metadata.name should "
                              "not be set")
    utype = (spec.get("upgradeStrategy") or {}).get("type")
    if utype is not None and utype not in _UPGRADE_TYPES:
        raise ValidationError(f"{prefix}: Spec.UpgradeStrategy.Type value {utype} is invalid, valid options are "
                              "NewClusterWithIncrementalUpgrade, NewCluster, or None")
    delay = spec.get("rayClusterDeletionDelaySeconds")
    if delay is not None and int(delay) < 0:
        raise ValidationError(f"{prefix}: Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, "
                              f"got {delay}")
