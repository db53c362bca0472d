"""Defaults and validation of the kinds served beside the original set: StatefulSet, DaemonSet,
CronJob, ReplicationController, PodDisruptionBudget, PersistentVolumeClaim, PersistentVolume,
PodTemplate, registered as strategies (:func:`pumice.apiserver.strategy.register`) when this module is imported
(the registry imports it).

Mirrors: kubernetes pkg/apis/apps/v1/defaults.go (SetDefaults_StatefulSet, SetDefaults_DaemonSet),
pkg/apis/batch/v1/defaults.go (SetDefaults_CronJob), pkg/apis/core/v1/defaults.go
(SetDefaults_ReplicationController, SetDefaults_PersistentVolume(Claim), SetObjectDefaults_PodTemplate:
the template's pod spec), and the matching
pkg/registry/*/strategy.go PrepareForCreate (status reset, generation) and
pkg/apis/*/validation (selector/template agreement, enum fields, immutable fields).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pumice.api import Obj
from pumice.api.admission import FieldCause
from pumice.api.apps import TEMPLATE_GENERATION
from pumice.api.cron import parse_schedule, time_zone_errors
from pumice.api.scheme import ResourceKind
from pumice.api.selectors import SelectorError, from_label_selector
from pumice.api.validation import (
    label_selector_causes,
    validate_claim_spec,
    validate_job_template_spec,
    validate_object,
    validate_percent_or_count,
    validate_pod_spec,
)
from pumice.apiserver import defaults as kdefaults
from pumice.apiserver import errors
from pumice.apiserver.strategy import Strategy, register

if TYPE_CHECKING:
    from pumice.apiserver.registry import Registry


__all__ = ["cron_schedule_error"]


def _template(spec: Obj) -> None:
    tpl = spec.get("template")
    if isinstance(tpl, dict):
        tpl.setdefault("metadata", {})  # a Go struct: written as {} when empty
    if isinstance(tpl, dict) and isinstance(tpl.get("spec"), dict):
        kdefaults.pod_spec(tpl["spec"])


def statefulset(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    us = spec.setdefault("updateStrategy", {})
    us.setdefault("type", "RollingUpdate")
    if us["type"] == "RollingUpdate":
        us.setdefault("rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    policy = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    policy.setdefault("whenDeleted", "Retain")
    policy.setdefault("whenScaled", "Retain")
    for claim in spec.get("volumeClaimTemplates") or []:
        if isinstance(claim, dict):
            persistent_volume_claim(claim)
            claim.setdefault("apiVersion", "v1")
            claim.setdefault("kind", "PersistentVolumeClaim")
    _template(spec)


def daemonset(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    us = spec.setdefault("updateStrategy", {})
    us.setdefault("type", "RollingUpdate")
    if us["type"] == "RollingUpdate":
        ru = us.setdefault("rollingUpdate", {})
        ru.setdefault("maxUnavailable", 1)
        ru.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(spec)


def cronjob(obj: Obj) -> None:
    """SetObjectDefaults_CronJob: SetDefaults_CronJob, and in the jobTemplate only the pod spec and
    the podFailurePolicy patterns (SetDefaults_Job is for Jobs: the controller's Job gets it when
    it is created)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    jt = spec.get("jobTemplate")
    if isinstance(jt, dict):
        jt.setdefault("metadata", {})  # a Go struct: written as {} when empty
    if isinstance(jt, dict) and isinstance(jt.get("spec"), dict):
        js = jt["spec"]
        _template(js)
        kdefaults.pod_failure_policy(js)


def replication_controller(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    tpl = spec.get("template") or {}
    labels = (tpl.get("metadata") or {}).get("labels") or {}
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        md = obj.setdefault("metadata", {})
        if not md.get("labels"):
            md["labels"] = dict(labels)
    spec.setdefault("replicas", 1)
    _template(spec)


def persistent_volume_claim(obj: Obj) -> None:
    obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")


def persistent_volume(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")


def _invalid(field: str, value: Any, detail: str) -> FieldCause:
    from pumice.api.validation import format_value

    return FieldCause(field, f"Invalid value: {format_value(value)}: {detail}", "FieldValueInvalid")


def _required(field: str) -> FieldCause:
    return FieldCause(field, "Required value", "FieldValueRequired")


def _unsupported(field: str, value: Any, supported: list[str]) -> FieldCause:
    from pumice.api.validation import format_value

    return FieldCause(field, f"Unsupported value: {format_value(value)}: supported values: "
                             + ", ".join(f'"{s}"' for s in supported), "FieldValueNotSupported")


def _selector_matches_template(spec: Obj, *, map_selector: bool = False, kind: str = "") -> list[FieldCause]:
    """The selector of a StatefulSet or DaemonSet (``kind``, lower case, names it in the empty
    selector's text) or of a ReplicationController (``map_selector``: a plain label map): metav1
    ValidateLabelSelector (:func:`pumice.api.validation.label_selector_causes`), an empty selector
    refused, and the template's labels matched by the whole selector (one that does not convert
    has its own causes already).

    Mirrors: kubernetes pkg/apis/apps/validation ValidateStatefulSetSpec, ValidateDaemonSetSpec."""
    sel = spec.get("selector")
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if sel is None:
        return [_required("spec.selector")]
    out: list[FieldCause] = []
    if map_selector:
        match = sel if isinstance(sel, dict) else {}
        selector_ok = True
        matches = from_label_selector({"matchLabels": match}).matches(labels)
    elif not isinstance(sel, dict):
        return []
    else:
        out += label_selector_causes(sel, "spec.selector")
        if not sel.get("matchLabels") and not sel.get("matchExpressions"):
            out.append(_invalid("spec.selector", sel, f"empty selector is invalid for {kind}"))
        try:
            matches = from_label_selector(sel).matches(labels)
            selector_ok = True
        except SelectorError:
            matches, selector_ok = True, False
    if selector_ok and not matches:
        out.append(_invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`"))
    return out


def cron_schedule_error(schedule: str) -> str:
    """Why ``schedule`` is not a standard 5-field cron expression (or a descriptor such as ``@hourly``,
    or ``@every <duration>``, as kube-apiserver's cron.ParseStandard);
    "" when it is one. The CronJob controller parses it with the same rules."""
    try:
        parse_schedule(schedule)
    except ValueError as e:
        return str(e)
    return ""


class _Workload(Strategy):
    """Status reset on create; generation (set by the registry); selector/template checks."""

    generation = True

    def __init__(self, defaulter: Any, check: Any) -> None:
        super().__init__(defaulter=defaulter)
        self._check = check

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        out = validate_object(rk, obj, old)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [*out, _required("spec")]
        return out + self._check(spec, old)




class _DaemonSetStrategy(_Workload):
    """A DaemonSet's template generation, kept in the ``deprecated.daemonset.template.generation``
    annotation: at least 1 on create, the stored one on update, one more when the template
    changed.

    Mirrors: kubernetes pkg/registry/apps/daemonset/strategy.go (PrepareForCreate,
    PrepareForUpdate), pkg/apis/apps/v1/conversion.go (Convert_v1_DaemonSet_To_apps_DaemonSet:
    a value that is not an integer fails the decoding).
    """

    @staticmethod
    def _generation(rk: ResourceKind, obj: Obj) -> int:
        value = ((obj.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION)
        if value is None:
            return 0
        try:
            return int(str(value))
        except ValueError:
            raise errors.cannot_handle(rk, f'strconv.ParseInt: parsing "{value}": invalid syntax') from None

    @staticmethod
    def _set(obj: Obj, generation: int) -> None:
        obj.setdefault("metadata", {}).setdefault("annotations", {})[TEMPLATE_GENERATION] = str(generation)

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        given = self._generation(rk, obj)
        super().prepare_create(reg, rk, obj)
        self._set(obj, max(given, 1))

    def default(self, obj: Obj) -> None:
        """The defaulter, and the annotation as the v1 conversion writes it (always: "0" until
        PrepareForCreate sets the generation), so the field manager sees it, as upstream's.

        Mirrors: kubernetes pkg/apis/apps/v1/conversion.go (Convert_apps_DaemonSet_To_v1_DaemonSet)."""
        super().default(obj)
        md = obj.setdefault("metadata", {})
        if not isinstance(md.get("annotations"), dict):
            md["annotations"] = {}
        md["annotations"].setdefault(TEMPLATE_GENERATION, "0")

    def prepare_update(self, reg: Registry, rk: ResourceKind, new: Obj, old: Obj) -> None:
        self._generation(rk, new)  # decoded, then overwritten
        super().prepare_update(reg, rk, new, old)
        generation = self._generation(rk, old)
        if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            generation += 1
        self._set(new, generation)


def _template_spec(spec: Obj, field: str, restart_policies: list[str]) -> list[FieldCause]:
    """ValidatePodTemplateSpec's pod spec rules (the same as a Pod's) for ``spec.template``."""
    return validate_pod_spec((spec.get("template") or {}).get("spec"), field, restart_policies)


def _with_claim_volumes(spec: Obj) -> Obj:
    """The StatefulSet spec with each ``volumeClaimTemplates`` name added to the template's volumes
    (as the controller adds them to each Pod), so that a container may mount a claim template."""
    names = [str((c.get("metadata") or {}).get("name") or "") for c in spec.get("volumeClaimTemplates") or []
             if isinstance(c, dict)]
    template = spec.get("template")
    if not names or not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return spec
    pod_spec: Obj = template["spec"]
    volumes = [v for v in pod_spec.get("volumes") or [] if isinstance(v, dict)]
    have = {v.get("name") for v in volumes}
    extra = [{"name": n, "persistentVolumeClaim": {"claimName": n}} for n in names if n and n not in have]
    return {**spec, "template": {**template, "spec": {**pod_spec, "volumes": [*(pod_spec.get("volumes") or []), *extra]}}}


def _check_statefulset(spec: Obj, old: Obj | None) -> list[FieldCause]:
    """Deviates: kube-apiserver skips the pod spec rules for a StatefulSet's template (its TODO:
    check the template against the union of its volumes and claim templates); pumice applies them
    with the claim templates counted as volumes, so a mount of a claim template is accepted and
    other template errors are refused at once instead of failing every Pod creation."""
    out = _selector_matches_template(spec, kind="statefulset")
    out += _template_spec(_with_claim_volumes(spec), "spec.template.spec", ["Always"])
    if spec.get("podManagementPolicy") not in ("OrderedReady", "Parallel"):
        out.append(_unsupported("spec.podManagementPolicy", spec.get("podManagementPolicy"),
                                ["OrderedReady", "Parallel"]))
    if not isinstance(spec.get("replicas"), int) or spec["replicas"] < 0:
        out.append(_invalid("spec.replicas", spec.get("replicas"), "must be greater than or equal to 0"))
    if old is not None:
        ospec = old.get("spec") or {}
        changed = [k for k in spec if k not in ("replicas", "template", "updateStrategy", "minReadySeconds",
                                                 "persistentVolumeClaimRetentionPolicy", "ordinals",
                                                 "revisionHistoryLimit") and spec.get(k) != ospec.get(k)]
        if changed:
            out.append(FieldCause("spec", "Forbidden: updates to statefulset spec for fields other than 'replicas', "
                                          "'ordinals', 'template', 'updateStrategy', "
                                          "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
                                          "forbidden", "FieldValueForbidden"))
    return out


def _check_daemonset(spec: Obj, old: Obj | None) -> list[FieldCause]:
    out = _selector_matches_template(spec, kind="daemonset")
    out += _template_spec(spec, "spec.template.spec", ["Always"])
    if old is not None and (old.get("spec") or {}).get("selector") != spec.get("selector"):
        out.append(_invalid("spec.selector", spec.get("selector"), "field is immutable"))
    return out


def _check_cronjob(spec: Obj, old: Obj | None) -> list[FieldCause]:
    out: list[FieldCause] = []
    schedule = spec.get("schedule")
    if not schedule:
        out.append(_required("spec.schedule"))
    else:
        why = cron_schedule_error(str(schedule))
        if why:
            out.append(_invalid("spec.schedule", schedule, why))
    # validateCronJobSpec checks the zone on create and when an update changes it, so a CronJob
    # stored with a zone refused since (Local) can still be updated
    tz = spec.get("timeZone")
    if tz is not None and (old is None or (old.get("spec") or {}).get("timeZone") != tz):
        out += [_invalid("spec.timeZone", tz, why) for why in time_zone_errors(str(tz))]
    if spec.get("concurrencyPolicy") not in ("Allow", "Forbid", "Replace"):
        out.append(_unsupported("spec.concurrencyPolicy", spec.get("concurrencyPolicy"), ["Allow", "Forbid", "Replace"]))
    if not isinstance(spec.get("jobTemplate"), dict):
        out.append(_required("spec.jobTemplate"))
    else:
        out += validate_job_template_spec(spec["jobTemplate"].get("spec") or {}, "spec.jobTemplate.spec")
    return out


def _check_rc(spec: Obj, old: Obj | None) -> list[FieldCause]:
    out = _selector_matches_template(spec, map_selector=True)
    out += _template_spec(spec, "spec.template.spec", ["Always"])
    if not isinstance(spec.get("replicas"), int) or spec["replicas"] < 0:
        out.append(_invalid("spec.replicas", spec.get("replicas"), "must be greater than or equal to 0"))
    return out


def _check_pdb(spec: Obj, old: Obj | None) -> list[FieldCause]:
    out: list[FieldCause] = []
    if "minAvailable" in spec and "maxUnavailable" in spec:
        out.append(FieldCause("spec", "Invalid value: minAvailable and maxUnavailable cannot be both set",
                              "FieldValueInvalid"))
    for key in ("minAvailable", "maxUnavailable"):
        if spec.get(key) is not None:
            out += validate_percent_or_count(spec[key], f"spec.{key}")
    return out


def _check_pvc(spec: Obj, old: Obj | None) -> list[FieldCause]:
    out = validate_claim_spec(spec, "spec")
    if old is not None:
        ospec = old.get("spec") or {}
        for key in ("accessModes", "storageClassName", "selector", "volumeMode"):
            if key in ospec and spec.get(key) != ospec.get(key):
                out.append(FieldCause("spec", "Forbidden: spec is immutable after creation except "
                                              "resources.requests and volumeAttributesClassName for bound claims",
                                      "FieldValueForbidden"))
                break
        if ospec.get("volumeName") and spec.get("volumeName") != ospec.get("volumeName"):
            out.append(FieldCause("spec", "Forbidden: spec is immutable after creation except resources.requests "
                                          "and volumeAttributesClassName for bound claims", "FieldValueForbidden"))
    return out


def _check_pv(spec: Obj, old: Obj | None) -> list[FieldCause]:
    out: list[FieldCause] = []
    if not (spec.get("capacity") or {}).get("storage"):
        out.append(_required("spec.capacity"))
    if not spec.get("accessModes"):
        out.append(_required("spec.accessModes"))
    if spec.get("persistentVolumeReclaimPolicy") not in ("Retain", "Delete", "Recycle"):
        out.append(_unsupported("spec.persistentVolumeReclaimPolicy", spec.get("persistentVolumeReclaimPolicy"),
                                ["Delete", "Recycle", "Retain"]))
    return out


class _VolumeStrategy(_Workload):
    """PersistentVolume(Claim)s start in phase Pending (and have no generation)."""

    generation = False

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        super().prepare_create(reg, rk, obj)
        obj["status"] = {"phase": "Pending"}


register("apps", "statefulsets", _Workload(statefulset, _check_statefulset))
register("apps", "daemonsets", _DaemonSetStrategy(daemonset, _check_daemonset))
register("batch", "cronjobs", _Workload(cronjob, _check_cronjob))
register("", "replicationcontrollers", _Workload(replication_controller, _check_rc))
register("policy", "poddisruptionbudgets", _Workload(None, _check_pdb))
register("", "persistentvolumeclaims", _VolumeStrategy(persistent_volume_claim, _check_pvc))
register("", "persistentvolumes", _VolumeStrategy(persistent_volume, _check_pv))


def pod_template(obj: Obj) -> None:
    """SetObjectDefaults_PodTemplate, in place: the pod spec defaults of ``template.spec`` (not
    the Pod-only ones: requests are not defaulted from limits in a template)."""
    _template(obj)


# PodTemplate: generation 1, one more on each change of the template (podTemplateStrategy);
# ValidatePodTemplate(Update) is the "PodTemplate" rule of api.validation
register("", "podtemplates", Strategy(defaulter=pod_template, generation=True))
