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
from pumice.api import Obj, yamlsafe
from pumice.api.ray.constants import RayClusterUpgradeType
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.common import pod as podb
from pumice.controllers.ray.common.job import go_quote

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


class ValidationError(ValueError):
    """The object is invalid; the message says why."""


def validate_raycluster_spec(spec: Obj, annotations: dict[str, str] | None = None) -> None:
    """Raises:
        ValidationError: see module docstring for the rules."""
    annotations = annotations or {}
    head = spec.get("headGroupSpec") or {}
    if not ((head.get("template") or {}).get("spec") or {}).get("containers"):
        raise ValidationError("headGroupSpec should have at least one container")
    autoscaling = bool(spec.get("enableInTreeAutoscaling"))
    names = set()
    for g in spec.get("workerGroupSpecs") or []:
        gname = g.get("groupName", "")
        if gname in names:
            raise ValidationError(f"worker group names must be unique: {gname} is repeated")
        names.add(gname)
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
        if g.get("suspend") and autoscaling:
            raise ValidationError(f"worker group {gname} cannot be suspended with Autoscaler enabled")
        if "labels" in (g.get("rayStartParams") or {}):
            raise ValidationError(f"rayStartParams['labels'] is not supported for {gname} group; please use the top-level "
                                  "Labels field instead")
        if g.get("resources") and any(k in (g.get("rayStartParams") or {}) for k in ("num-cpus", "num-gpus", "memory", "resources")):
            raise ValidationError(f"resource fields should not be set in both rayStartParams and Resources for {gname} "
                                  "group; please use only one")
    if "labels" in (head.get("rayStartParams") or {}):
        raise ValidationError("rayStartParams['labels'] is not supported for Head group; please use the top-level Labels "
                              "field instead")
    if annotations.get(c.RAY_FT_ENABLED_ANNOTATION_KEY) is not None and spec.get("gcsFaultToleranceOptions"):
        raise ValidationError(f"{c.RAY_FT_ENABLED_ANNOTATION_KEY} annotation and GcsFaultToleranceOptions are both set. "
                              "Please use only GcsFaultToleranceOptions to configure GCS fault tolerance")
    _validate_auth_options(spec)


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


def validate_raycluster(cluster: Obj) -> None:
    meta = cluster.get("metadata") or {}
    name = meta.get("name", "")
    if len(name) > c.MAX_RAYCLUSTER_NAME_LENGTH:
        raise ValidationError(f"RayCluster name should be no more than {c.MAX_RAYCLUSTER_NAME_LENGTH} characters")
    if not _DNS1035.match(name):
        raise ValidationError(f"RayCluster name should be a valid DNS-1035 label: {name}")
    validate_raycluster_spec(cluster.get("spec") or {}, meta.get("annotations") or {})


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


def validate_rayjob(rayjob: Obj) -> None:
    """Raises:
        ValidationError: name, spec or status invalid (see module docstring)."""
    meta = rayjob.get("metadata") or {}
    name = meta.get("name", "")
    if len(name) > c.MAX_RAYJOB_NAME_LENGTH:
        raise ValidationError(f"The RayJob metadata.name {name} should be no more than "
                              f"{c.MAX_RAYJOB_NAME_LENGTH} characters")
    if not _DNS1035.match(name):
        raise ValidationError(f"The RayJob metadata.name {name} should be a valid DNS-1035 label")
    spec = rayjob.get("spec") or {}
    mode = spec.get("submissionMode") or c.JobSubmissionMode.K8S_JOB_MODE
    if mode not in {m.value for m in c.JobSubmissionMode}:
        raise ValidationError(f"unknown submissionMode {mode!r}")
    selector = spec.get("clusterSelector") or {}
    cluster_spec = spec.get("rayClusterSpec")
    if not selector and not cluster_spec:
        raise ValidationError("one of RayClusterSpec or ClusterSelector must be set")
    if selector and cluster_spec:
        raise ValidationError("only one of RayClusterSpec and ClusterSelector can be set")
    if selector and not selector.get(c.RAY_CLUSTER_LABEL_KEY):
        raise ValidationError(f"clusterSelector must contain the key {c.RAY_CLUSTER_LABEL_KEY}")
    if selector and mode == c.JobSubmissionMode.SIDECAR_MODE:
        raise ValidationError("ClusterSelector is not supported in SidecarMode")
    backoff = spec.get("backoffLimit")
    if backoff is not None and int(backoff) < 0:
        raise ValidationError("backoffLimit must be a positive integer")
    if backoff is not None and int(backoff) > 0:
        if selector:
            raise ValidationError("BackoffLimit is incompatible with ClusterSelector")
        if mode == c.JobSubmissionMode.INTERACTIVE_MODE:
            raise ValidationError("BackoffLimit is incompatible with InteractiveMode")
    if spec.get("suspend"):
        if selector:
            raise ValidationError("the ClusterSelector mode doesn't support the suspend operation")
        if not spec.get("shutdownAfterJobFinishes"):
            raise ValidationError("a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended")
    if mode == c.JobSubmissionMode.SIDECAR_MODE:
        if spec.get("submitterPodTemplate"):
            raise ValidationError("Currently, SidecarMode doesn't support SubmitterPodTemplate")
        if spec.get("submitterConfig"):
            raise ValidationError("Currently, SidecarMode doesn't support SubmitterConfig")
        rp = ((cluster_spec or {}).get("headGroupSpec", {}).get("template", {}).get("spec") or {}).get("restartPolicy")
        if rp not in (None, "", "Never"):
            raise ValidationError("restartPolicy for head Pod should be Never or unset when using SidecarMode")
    if spec.get("runtimeEnvYAML"):
        try:
            yamlsafe.safe_load(spec["runtimeEnvYAML"])
        except yaml.YAMLError as e:
            raise ValidationError(f"failed to unmarshal RuntimeEnvYAML: {e}") from e
    for field_name, minimum in (("activeDeadlineSeconds", 1), ("preRunningDeadlineSeconds", 1)):
        v = spec.get(field_name)
        if v is not None and int(v) < minimum:
            raise ValidationError(f"{field_name} must be a positive integer")
    ttl = int(spec.get("ttlSecondsAfterFinished") or 0)
    if ttl < 0:
        raise ValidationError("TTLSecondsAfterFinished must be a non-negative integer")
    strategy = spec.get("deletionStrategy")
    if strategy:
        _validate_deletion_strategy(spec, strategy)
    elif ttl > 0 and not spec.get("shutdownAfterJobFinishes"):
        raise ValidationError("a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished")
    if cluster_spec:
        if podb.is_k8s_auth_enabled(cluster_spec.get("authOptions")):
            raise ValidationError("The RayJob spec is invalid: K8s token auth mode is currently not supported for RayJob")
        validate_raycluster_spec(cluster_spec)
    status = rayjob.get("status") or {}
    if status.get("jobDeploymentStatus") == c.JobDeploymentStatus.WAITING and mode != c.JobSubmissionMode.INTERACTIVE_MODE:
        raise ValidationError("JobDeploymentStatus cannot be `Waiting` when SubmissionMode is not InteractiveMode")


def _validate_deletion_strategy(spec: Obj, strategy: Obj) -> None:
    rules = strategy.get("deletionRules")
    legacy = strategy.get("onSuccess") is not None or strategy.get("onFailure") is not None
    policies = {p.value for p in c.DeletionPolicyType}
    if rules is not None:
        if legacy:
            raise ValidationError("deletionRules and onSuccess/onFailure cannot be used together")
        if spec.get("shutdownAfterJobFinishes"):
            raise ValidationError("deletionRules cannot be used together with shutdownAfterJobFinishes")
        if int(spec.get("ttlSecondsAfterFinished") or 0) > 0:
            raise ValidationError("deletionRules cannot be used together with the global TTLSecondsAfterFinished")
        if spec.get("clusterSelector"):
            raise ValidationError("deletionRules are not supported with ClusterSelector")
        for rule in rules:
            if rule.get("policy") not in policies:
                raise ValidationError(f"unknown deletion policy {rule.get('policy')!r}")
            cond = rule.get("condition") or {}
            has_js, has_jds = cond.get("jobStatus") is not None, cond.get("jobDeploymentStatus") is not None
            if has_js == has_jds:
                raise ValidationError("exactly one of condition.jobStatus and condition.jobDeploymentStatus must be set")
            if int(cond.get("ttlSeconds") or 0) < 0:
                raise ValidationError("condition.ttlSeconds must be non-negative")
        return
    if strategy.get("onSuccess") is None or strategy.get("onFailure") is None:
        raise ValidationError("both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set")
    for which in ("onSuccess", "onFailure"):
        pol = (strategy[which] or {}).get("policy")
        if pol not in policies:
            raise ValidationError(f"the {which} policy {pol!r} is not a deletion policy")
    if spec.get("shutdownAfterJobFinishes"):
        raise ValidationError("DeletionStrategy cannot be used together with shutdownAfterJobFinishes")


MAX_RAYSERVICE_NAME_LENGTH = c.MAX_RAYCLUSTER_NAME_LENGTH - 6
_UPGRADE_TYPES = ("NewClusterWithIncrementalUpgrade", "NewCluster", "None")


def initializing_timeout_seconds(annotations: dict[str, str]) -> float | None:
    """The ``ray.io/initializing-timeout`` annotation in seconds (Go duration or integer seconds),
    None when absent.

    Raises:
        ValidationError: unparsable or not positive.
    """
    raw = annotations.get(c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION)
    if raw is None:
        return None
    try:
        secs = float(int(raw)) if raw.strip().lstrip("-").isdigit() else parse_go_duration(raw)
    except ValueError as e:
        raise ValidationError(f"invalid {c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION} annotation {raw!r}: "
                              "must be a Go duration (e.g. 30m) or a positive integer of seconds") from e
    if secs <= 0:
        raise ValidationError(f"{c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION} annotation must be positive, "
                              f"got {raw!r}")
    return secs


def validate_rayservice_metadata(rayservice: Obj) -> None:
    """Raises:
        ValidationError: name too long or not DNS-1035; bad initializing-timeout annotation.

    Mirrors: utils/validation.go ValidateRayServiceMetadata."""
    meta = rayservice.get("metadata") or {}
    name = meta.get("name", "")
    if len(name) > MAX_RAYSERVICE_NAME_LENGTH:
        raise ValidationError("The RayService metadata is invalid: RayService name should be no more than "
                              f"{MAX_RAYSERVICE_NAME_LENGTH} characters")
    if not _DNS1035.match(name):
        raise ValidationError("The RayService metadata is invalid: RayService name should be a valid DNS1035 "
                              f"label: {name}")
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
