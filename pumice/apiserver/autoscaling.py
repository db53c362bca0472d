"""autoscaling/v2 and autoscaling/v1 HorizontalPodAutoscaler: one store (the v2 form) behind both
versions, defaulted and validated as kube-apiserver does, registered as strategies
(:func:`pumice.apiserver.strategy.register`) when this module is imported (the registry imports it).

Defaults (SetDefaults_HorizontalPodAutoscaler, v2): ``minReplicas`` 1; with no metrics, one
Resource metric, cpu at 80% average utilization; a given ``behavior`` gets every unset scaling
rule field (scale up: no stabilization window, select Max, policies 4 Pods and 100 Percent per
15 s; scale down: select Max, 100 Percent per 15 s, the window left to the controller's 300 s).
A new HPA's status is the Go zero value (``desiredReplicas`` 0, ``currentMetrics`` null).

autoscaling/v1 (what ``kubectl autoscale`` of kubectl 1.32 posts) is converted on the way in
and out: ``targetCPUUtilizationPercentage`` is the cpu Utilization metric (80 when absent),
the status's ``currentCPUUtilizationPercentage`` the cpu metric's current utilization; the v2
``behavior`` and status conditions travel in the ``autoscaling.alpha.kubernetes.io/behavior``
and ``.../conditions`` annotations of the v1 form, as upstream.

Mirrors: kubernetes pkg/apis/autoscaling/v2/defaults.go, pkg/apis/autoscaling/v1/defaults.go and
conversion.go, pkg/apis/autoscaling/validation/validation.go (ValidateHorizontalPodAutoscaler,
ValidateHorizontalPodAutoscalerUpdate, ValidateHorizontalPodAutoscalerStatusUpdate),
pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go.

The ``autoscaling.alpha.kubernetes.io/metrics``, ``current-metrics`` and ``conditions``
annotations of a v1 body are decoded as upstream decodes them (v1 MetricSpec, MetricStatus and
condition lists) and converted: the metrics go before the cpu target, the 80% default only when
there are none; an annotation that does not decode refuses the request (400).

Read back in v1, the metrics other than cpu utilization go into the metrics annotation and every
current metric into the current-metrics annotation, in the v1 shapes (upstream's
Convert_autoscaling_*_To_v1_*), so a v1 read-modify-write keeps them.

Deviates: the behavior annotation holds the v2 JSON form (upstream: its internal Go field names).
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from pumice.api import Obj, protobuf
from pumice.api.admission import FieldCause
from pumice.api.godecode import go_json_value, unmarshal_error
from pumice.api.gojson import go_number, syntax_error
from pumice.api.quantity import QuantityError, parse_quantity
from pumice.api.scheme import HORIZONTAL_POD_AUTOSCALER_V1, ResourceKind
from pumice.api.validation import (
    container_resource_name_errors,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    is_dns1123_label,
    is_path_segment_name,
    validate_object,
)
from pumice.apiserver import errors
from pumice.apiserver.strategy import Strategy, register

if TYPE_CHECKING:
    from pumice.apiserver.registry import Registry

__all__ = ["hpa_defaults", "hpa_spec_causes", "to_v1", "to_v2"]

V1, V2 = "autoscaling/v1", "autoscaling/v2"
DEFAULT_CPU_UTILIZATION = 80
METRIC_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"]
SELECT_POLICIES = ["Disabled", "Max", "Min"]
POLICY_TYPES = ["Percent", "Pods"]
MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
_V1_CONDITION_FIELDS = ("type", "status", "lastTransitionTime", "reason", "message", "observedGeneration")
_ROUND_TRIP = (METRICS_ANNOTATION, CURRENT_METRICS_ANNOTATION, BEHAVIOR_ANNOTATION, CONDITIONS_ANNOTATION)
_V1 = "k8s.io.api.autoscaling.v1."
_BEHAVIOR_MESSAGE = "k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerBehavior"
_SOURCES = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
            "ContainerResource": "containerResource"}
_SCALE_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
             "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                          {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_SCALE_DOWN = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _map(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[Obj]:
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def _cpu_metric(averageUtilization: int) -> Obj:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                        "averageUtilization": averageUtilization}}}


# --- defaults -------------------------------------------------------------------------------------


def _rules(given: Any, default: Obj) -> Obj:
    """GenerateHPAScale{Up,Down}Rules: the default rules with every field ``given`` sets."""
    out = copy.deepcopy(default)
    for key, value in _map(given).items():
        if value is not None:
            out[key] = value
    return out


def hpa_defaults(obj: Obj) -> None:
    """SetDefaults_HorizontalPodAutoscaler (v2), in place (see the module docstring)."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [_cpu_metric(DEFAULT_CPU_UTILIZATION)]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _rules(behavior.get("scaleUp"), _SCALE_UP)
        behavior["scaleDown"] = _rules(behavior.get("scaleDown"), _SCALE_DOWN)


# --- validation -----------------------------------------------------------------------------------


def _cross_version_reference(ref: Obj, at: str) -> list[FieldCause]:
    """ValidateCrossVersionObjectReference: kind and name required path segment names; the
    apiVersion parses and names an API group."""
    out: list[FieldCause] = []
    for key in ("kind", "name"):
        value = str(ref.get(key) or "")
        if not value:
            out.append(field_required(f"{at}.{key}"))
        else:
            out += [field_invalid(f"{at}.{key}", value, e) for e in is_path_segment_name(value)]
    api_version = str(ref.get("apiVersion") or "")
    parts = api_version.split("/")
    if len(parts) > 2:
        out.append(field_invalid(f"{at}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"))
    elif len(parts) == 1 or not parts[0]:
        out.append(field_invalid(f"{at}.apiVersion", api_version, "apiVersion must specify API group"))
    return out


def _quantity_sign(value: Any) -> int:
    try:
        q = parse_quantity(value)
    except (QuantityError, TypeError):
        return 1  # not a quantity: a type error before validation
    return (q > 0) - (q < 0)


def _metric_target(target: Obj, at: str) -> list[FieldCause]:
    """validateMetricTarget: the type one of Utilization, Value, AverageValue; values positive,
    a utilization at least 1."""
    out: list[FieldCause] = []
    ttype = target.get("type") or ""
    if not ttype:
        out.append(field_required(f"{at}.type", "must specify a metric target type"))
    if ttype not in ("Utilization", "Value", "AverageValue"):
        out.append(field_invalid(f"{at}.type", ttype, "must be either Utilization, Value, or AverageValue"))
    for key in ("value", "averageValue"):
        if target.get(key) is not None and _quantity_sign(target[key]) != 1:
            out.append(field_invalid(f"{at}.{key}", target[key], "must be positive"))
    util = target.get("averageUtilization")
    if isinstance(util, int) and util < 1:
        out.append(field_invalid(f"{at}.averageUtilization", util, "must be greater than 0"))
    return out


def _metric_identifier(metric: Obj, at: str) -> list[FieldCause]:
    name = str(metric.get("name") or "")
    if not name:
        return [field_required(f"{at}.name", "must specify a metric name")]
    return [field_invalid(f"{at}.name", name, e) for e in is_path_segment_name(name)]


def _source(kind: str, src: Obj, at: str) -> list[FieldCause]:
    """validate{Object,External,Pods,Resource,ContainerResource}Source."""
    target = _map(src.get("target"))
    tat = f"{at}.target"
    out: list[FieldCause] = []
    if kind == "object":
        out += _cross_version_reference(_map(src.get("describedObject")), f"{at}.describedObject")
    if kind in ("object", "external", "pods"):
        out += _metric_identifier(_map(src.get("metric")), f"{at}.metric")
        out += _metric_target(target, tat)
        if kind == "object" and target.get("value") is None and target.get("averageValue") is None:
            out.append(field_required(f"{tat}.averageValue", "must set either a target value or averageValue"))
        if kind == "external":
            if target.get("value") is None and target.get("averageValue") is None:
                out.append(field_required(f"{tat}.averageValue",
                                          "must set either a target value for metric or a per-pod target"))
            if target.get("value") is not None and target.get("averageValue") is not None:
                out.append(field_forbidden(f"{tat}.value", "may not set both a target value for metric and a per-pod "
                                                          "target"))
        if kind == "pods" and target.get("averageValue") is None:
            out.append(field_required(f"{tat}.averageValue", "must specify a positive target averageValue"))
        return out
    name = str(src.get("name") or "")
    if not name:
        out.append(field_required(f"{at}.name", "must specify a resource name"))
    elif kind == "containerResource":
        out += [field_invalid(f"{at}.name", name, e) for e in container_resource_name_errors(name)]
    if kind == "containerResource":
        container = str(src.get("container") or "")
        if not container:
            out.append(field_required(f"{at}.container", "must specify a container"))
        else:
            out += [field_invalid(f"{at}.container", container, e) for e in is_dns1123_label(container)]
    out += _metric_target(target, tat)
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        out.append(field_required(f"{tat}.averageUtilization", "must set either a target raw value or a target "
                                                               "utilization"))
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        out.append(field_forbidden(f"{tat}.averageValue", "may not set both a target raw value and a target "
                                                          "utilization"))
    return out


def _metric_spec(metric: Obj, at: str) -> list[FieldCause]:
    """validateMetricSpec: the type (an unknown one is reported twice, as upstream), its source
    present and valid, no other source."""
    out: list[FieldCause] = []
    mtype = metric.get("type") or ""
    if not mtype:
        out.append(field_required(f"{at}.type", "must specify a metric source type"))
    if mtype not in METRIC_TYPES:
        out.append(field_not_supported(f"{at}.type", mtype, METRIC_TYPES))
    present = [key for key in ("object", "external", "pods", "resource", "containerResource")
               if metric.get(key) is not None]
    if present:
        out += _source(present[0], _map(metric[present[0]]), f"{at}.{present[0]}")
    expected = _SOURCES.get(str(mtype))
    if expected is None:
        out.append(field_not_supported(f"{at}.type", mtype, METRIC_TYPES))
    elif metric.get(expected) is None:
        out.append(field_required(f"{at}.{expected}", "must populate information for the given metric source"))
    if len(present) != 1:
        out += [field_forbidden(f"{at}.{key}", "must populate the given metric source only")
                for key in present if key != expected]
    return out


def _scaling_rules(rules: Any, at: str) -> list[FieldCause]:
    """validateScalingRules: the window within 0-3600 s, the select policy, at least one policy,
    each policy's type, value and period (1-1800 s), a non-negative tolerance."""
    if not isinstance(rules, dict):
        return []
    out: list[FieldCause] = []
    window = rules.get("stabilizationWindowSeconds")
    if isinstance(window, int) and window < 0:
        out.append(field_invalid(f"{at}.stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if isinstance(window, int) and window > MAX_STABILIZATION_WINDOW_SECONDS:
        out.append(field_invalid(f"{at}.stabilizationWindowSeconds", window,
                                 f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        out.append(field_not_supported(f"{at}.selectPolicy", select, SELECT_POLICIES))
    policies = _dicts(rules.get("policies"))
    if not policies:
        out.append(field_required(f"{at}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        pat = f"{at}.policies[{i}]"
        if policy.get("type") not in POLICY_TYPES:
            out.append(field_not_supported(f"{pat}.type", policy.get("type") or "", POLICY_TYPES))
        value, period = policy.get("value") or 0, policy.get("periodSeconds") or 0
        if value <= 0:
            out.append(field_invalid(f"{pat}.value", value, "must be greater than zero"))
        if period <= 0:
            out.append(field_invalid(f"{pat}.periodSeconds", period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            out.append(field_invalid(f"{pat}.periodSeconds", period, f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    tolerance = rules.get("tolerance")
    if tolerance is not None and _quantity_sign(tolerance) < 0:
        out.append(field_invalid(f"{at}.tolerance", tolerance, "must be greater than or equal to 0"))
    return out


def hpa_spec_causes(spec: Obj) -> list[FieldCause]:
    """validateHorizontalPodAutoscalerSpec (HPAScaleToZero off: minReplicas at least 1): the
    replica bounds, the scale target reference, the metrics (scaling to zero needs an Object or
    External metric), the behavior."""
    out: list[FieldCause] = []
    lo, hi = spec.get("minReplicas"), spec.get("maxReplicas") or 0
    if isinstance(lo, int) and lo < 1:
        out.append(field_invalid("spec.minReplicas", lo, "must be greater than or equal to 1"))
    if hi < 1:
        out.append(field_invalid("spec.maxReplicas", hi, "must be greater than 0"))
    if isinstance(lo, int) and hi < lo:
        out.append(field_invalid("spec.maxReplicas", hi, "must be greater than or equal to `minReplicas`"))
    out += _cross_version_reference(_map(spec.get("scaleTargetRef")), "spec.scaleTargetRef")
    metrics = _dicts(spec.get("metrics"))
    for i, metric in enumerate(metrics):
        out += _metric_spec(metric, f"spec.metrics[{i}]")
    if lo == 0 and not any(m.get("type") in ("Object", "External") for m in metrics):
        out.append(field_forbidden("spec.metrics", "must specify at least one Object or External metric to support "
                                                   "scaling to zero replicas"))
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        out += _scaling_rules(behavior.get("scaleUp"), "spec.behavior.scaleUp")
        out += _scaling_rules(behavior.get("scaleDown"), "spec.behavior.scaleDown")
    return out


# --- v1 <-> v2 ------------------------------------------------------------------------------------


def to_v2(obj: Obj) -> Obj:
    """An autoscaling/v1 HPA in the v2 form (a new dict; see the module docstring).

    Raises:
        DecodeError: a metrics, current-metrics or conditions annotation that does not decode
            into its v1 list (:func:`_round_trip_lists`)."""
    out = copy.deepcopy(obj)
    out["apiVersion"] = V2
    md = out.setdefault("metadata", {})
    annotations = dict(md.get("annotations") or {})
    metrics, current_metrics, conditions = _round_trip_lists(annotations)
    behavior = annotations.get(BEHAVIOR_ANNOTATION)
    for key in _ROUND_TRIP:
        annotations.pop(key, None)
    if annotations:
        md["annotations"] = annotations
    else:
        md.pop("annotations", None)
    spec = _map(out.get("spec"))
    cpu = spec.pop("targetCPUUtilizationPercentage", None)
    # the annotation's metrics first, then the cpu target; the 80% default only when there are none
    spec["metrics"] = [_metric_from_v1(m) for m in metrics or ()] + ([] if cpu is None else [_cpu_metric(cpu)])
    if not spec["metrics"]:
        spec["metrics"] = [_cpu_metric(DEFAULT_CPU_UTILIZATION)]
    if behavior:
        decoded = _annotated_struct(behavior, _BEHAVIOR_MESSAGE)
        if decoded:  # upstream keeps a behavior that decodes and is not the zero value
            spec["behavior"] = decoded
    if isinstance(out.get("status"), dict):
        status = out["status"]
        if not status.get("currentReplicas"):
            status.pop("currentReplicas", None)  # omitempty in v2, always written in v1
        current = status.pop("currentCPUUtilizationPercentage", None)
        status["currentMetrics"] = None if current is None else [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": current}}}]
        if current_metrics is not None:  # the annotation's, in place of the cpu one
            status["currentMetrics"] = [_metric_status_from_v1(m) for m in current_metrics]
        if conditions is not None:
            status["conditions"] = [_condition_from_v1(c) for c in conditions]
    return out


def _round_trip_lists(annotations: Obj) -> tuple[list[Obj] | None, list[Obj] | None, list[Obj] | None]:
    """The metrics, current-metrics and conditions annotations of a v1 HPA decoded as upstream's
    conversion decodes them (each a JSON list of the v1 MetricSpec, MetricStatus and
    HorizontalPodAutoscalerCondition; field names matched as Go does, unknown keys and nulls
    dropped); None for an annotation not set.

    Raises:
        DecodeError: the 400 ``HorizontalPodAutoscaler in version "v1" cannot be handled as a
            HorizontalPodAutoscaler: <Go's decode error>`` for an annotation that does not decode.

    Mirrors: kubernetes pkg/apis/autoscaling/v1/conversion.go
    (Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler: json.Unmarshal of
    MetricSpecsAnnotation, MetricStatusesAnnotation, HorizontalPodAutoscalerConditionsAnnotation,
    the conversion failing on error)."""
    def decoded(key: str, message: str) -> list[Obj] | None:
        text = annotations.get(key)
        return None if text is None else _annotated_list(str(text), _V1 + message)

    return (decoded(METRICS_ANNOTATION, "MetricSpec"), decoded(CURRENT_METRICS_ANNOTATION, "MetricStatus"),
            decoded(CONDITIONS_ANNOTATION, "HorizontalPodAutoscalerCondition"))


def _annotated_list(text: str, message: str) -> list[Obj]:
    """``text`` decoded as Go's json.Unmarshal into a slice of ``message``'s struct (see
    :func:`_round_trip_lists`); raises its DecodeError."""
    go_type = "v1." + message.rsplit(".", 1)[1]
    why = syntax_error(text.encode())
    if why is None:
        value = json.loads(text)
        if value is None:
            return []
        if not isinstance(value, list):
            why = f"json: cannot unmarshal {go_json_value(value)} into Go value of type []{go_type}"
        else:
            items: list[Obj] = []
            schema = protobuf.schema()
            for item in value:
                if item is not None and not isinstance(item, dict):
                    why = f"json: cannot unmarshal {go_json_value(item)} into Go value of type {go_type}"
                    break
                item = _go_keys(schema, message, item or {})
                why = unmarshal_error(message, item)
                if why is not None:
                    break
                items.append(item)
            else:
                return items
    raise errors.cannot_handle(HORIZONTAL_POD_AUTOSCALER_V1, why)


def _quantity(value: Any) -> Any:
    """A decoded quantity as the v2 form holds it: a JSON number (which Go's Quantity also reads)
    as its string."""
    return go_number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _identifier(name: Any, selector: Any) -> Obj:
    out: Obj = {"name": name or ""}
    if selector is not None:
        out["selector"] = selector
    return out


def _set(**values: Any) -> Obj:
    return {k: _quantity(v) for k, v in values.items() if v is not None}


def _metric_from_v1(m: Obj) -> Obj:
    """A v1 MetricSpec (decoded by :func:`_annotated_list`) as the v2 MetricSpec.

    Mirrors: kubernetes pkg/apis/autoscaling/v1/conversion.go (Convert_v1_{Object,Pods,External,
    Resource}MetricSource_To_autoscaling_*; a container resource as a resource)."""
    out: Obj = {"type": m.get("type") or ""}
    if (src := m.get("object")) is not None:
        out["object"] = {"describedObject": src.get("target") or {"kind": "", "name": ""},
                         "metric": _identifier(src.get("metricName"), src.get("selector")),
                         "target": _set(type="Value" if src.get("averageValue") is None else "AverageValue",
                                        value=src.get("targetValue", "0"), averageValue=src.get("averageValue"))}
    if (src := m.get("pods")) is not None:
        out["pods"] = {"metric": _identifier(src.get("metricName"), src.get("selector")),
                       "target": _set(type="AverageValue", averageValue=src.get("targetAverageValue", "0"))}
    if (src := m.get("external")) is not None:
        out["external"] = {"metric": _identifier(src.get("metricName"), src.get("metricSelector")),
                           "target": _set(type="AverageValue" if src.get("targetValue") is None else "Value",
                                          value=src.get("targetValue"), averageValue=src.get("targetAverageValue"))}
    for key in ("resource", "containerResource"):
        if (src := m.get(key)) is not None:
            util = src.get("targetAverageUtilization")
            out[key] = _set(name=src.get("name") or "", container=src.get("container") if key != "resource" else None,
                            target=_set(type="AverageValue" if util is None else "Utilization",
                                        averageUtilization=util, averageValue=src.get("targetAverageValue")))
            if key == "containerResource":
                out[key].setdefault("container", "")
    return out


def _metric_status_from_v1(m: Obj) -> Obj:
    """A v1 MetricStatus (decoded by :func:`_annotated_list`) as the v2 MetricStatus.

    Mirrors: kubernetes pkg/apis/autoscaling/v1/conversion.go (Convert_v1_{Object,Pods,External,
    Resource}MetricStatus_To_autoscaling_*)."""
    out: Obj = {"type": m.get("type") or ""}
    if (src := m.get("object")) is not None:
        out["object"] = {"describedObject": src.get("target") or {"kind": "", "name": ""},
                         "metric": _identifier(src.get("metricName"), src.get("selector")),
                         "current": _set(value=src.get("currentValue", "0"), averageValue=src.get("averageValue"))}
    if (src := m.get("pods")) is not None:
        out["pods"] = {"metric": _identifier(src.get("metricName"), src.get("selector")),
                       "current": _set(averageValue=src.get("currentAverageValue", "0"))}
    if (src := m.get("external")) is not None:
        out["external"] = {"metric": _identifier(src.get("metricName"), src.get("metricSelector")),
                           "current": _set(value=src.get("currentValue", "0"),
                                           averageValue=src.get("currentAverageValue"))}
    for key in ("resource", "containerResource"):
        if (src := m.get(key)) is not None:
            out[key] = _set(name=src.get("name") or "", container=src.get("container") if key != "resource" else None,
                            current=_set(averageUtilization=src.get("currentAverageUtilization"),
                                         averageValue=src.get("currentAverageValue", "0")))
            if key == "containerResource":
                out[key].setdefault("container", "")
    return out


def _condition_from_v1(c: Obj) -> Obj:
    """A v1 HorizontalPodAutoscalerCondition (decoded) as the v2 one: the same fields, ``type``
    and ``status`` always written (Go: no omitempty)."""
    return {"type": c.get("type") or "", "status": c.get("status") or "",
            **{k: v for k, v in c.items() if k not in ("type", "status")}}


def _go_keys(schema: protobuf.Schema, message: str, obj: Obj) -> Obj:
    """``obj`` as encoding/json's non-strict decode into ``message``'s Go struct reads it: each
    key matched to a field's JSON name exactly or else case-insensitively (Go's fold), unknown
    keys and nulls dropped, nested structs (and lists of them) likewise; other values as given."""
    fields = schema.messages[message].by_name
    folded = {name.lower(): name for name in fields}
    out: Obj = {}
    for key, value in obj.items():
        name = key if key in fields else folded.get(key.lower())
        if name is None or value is None:  # a null leaves the Go field unset
            continue
        ftype = fields[name].type
        if ftype in schema.messages and not fields[name].map_key:
            if isinstance(value, dict):
                value = _go_keys(schema, ftype, value)
            elif isinstance(value, list):
                value = [_go_keys(schema, ftype, v) if isinstance(v, dict) else v for v in value]
        out[name] = value
    return out


def _annotated_struct(text: str, message: str) -> Obj | None:
    """The round-trip annotation ``text`` decoded as upstream's v1 conversion decodes it into a
    Go struct (protobuf message ``message``), or None when that fails (not JSON, not an object,
    a value of the wrong type: upstream then ignores the annotation). Field names match
    case-insensitively (upstream writes the behavior with its internal Go field names) and
    unknown ones are dropped.

    Mirrors: kubernetes pkg/apis/autoscaling/v1/conversion.go (json.Unmarshal of
    BehaviorSpecsAnnotation, the annotation ignored on error)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    schema = protobuf.schema()
    value = _go_keys(schema, message, value)
    if unmarshal_error(message, value) is not None:
        return None
    return value


def _kept(**values: Any) -> Obj:
    """The given fields that are set, as given (omitempty)."""
    return {k: v for k, v in values.items() if v is not None}


def _ref_to_v1(ref: Any) -> Obj:
    ref = _map(ref)
    out: Obj = {"kind": ref.get("kind") or "", "name": ref.get("name") or ""}
    if ref.get("apiVersion"):
        out["apiVersion"] = ref["apiVersion"]
    return out


def _metric_to_v1(m: Obj) -> Obj:
    """A v2 MetricSpec as the v1 MetricSpec of the metrics annotation (Go's field order; a
    non-pointer Quantity written ``"0"`` when unset).

    Mirrors: kubernetes pkg/apis/autoscaling/v1/conversion.go (Convert_autoscaling_{Object,Pods,
    Resource,ContainerResource,External}MetricSource_To_v1_*)."""
    out: Obj = {"type": m.get("type") or ""}
    if isinstance(src := m.get("object"), dict):
        target, metric = _map(src.get("target")), _map(src.get("metric"))
        out["object"] = _set(target=_ref_to_v1(src.get("describedObject")), metricName=metric.get("name") or "",
                             targetValue=target.get("value", "0"), selector=metric.get("selector"),
                             averageValue=target.get("averageValue"))
    if isinstance(src := m.get("pods"), dict):
        target, metric = _map(src.get("target")), _map(src.get("metric"))
        out["pods"] = _set(metricName=metric.get("name") or "", targetAverageValue=target.get("averageValue", "0"),
                           selector=metric.get("selector"))
    for key in ("resource", "containerResource"):
        if isinstance(src := m.get(key), dict):
            target = _map(src.get("target"))
            out[key] = _kept(name=src.get("name") or "", targetAverageUtilization=target.get("averageUtilization"),
                             targetAverageValue=_quantity(target.get("averageValue")))
            if key == "containerResource":
                out[key]["container"] = src.get("container") or ""
    if isinstance(src := m.get("external"), dict):
        target, metric = _map(src.get("target")), _map(src.get("metric"))
        out["external"] = _set(metricName=metric.get("name") or "", metricSelector=metric.get("selector"),
                               targetValue=target.get("value"), targetAverageValue=target.get("averageValue"))
    return out


def _metric_status_to_v1(m: Obj) -> Obj:
    """A v2 MetricStatus as the v1 MetricStatus of the current-metrics annotation.

    Mirrors: kubernetes pkg/apis/autoscaling/v1/conversion.go (Convert_autoscaling_{Object,Pods,
    Resource,ContainerResource,External}MetricStatus_To_v1_*)."""
    out: Obj = {"type": m.get("type") or ""}
    if isinstance(src := m.get("object"), dict):
        current, metric = _map(src.get("current")), _map(src.get("metric"))
        out["object"] = _set(target=_ref_to_v1(src.get("describedObject")), metricName=metric.get("name") or "",
                             currentValue=current.get("value", "0"), selector=metric.get("selector"),
                             averageValue=current.get("averageValue"))
    if isinstance(src := m.get("pods"), dict):
        current, metric = _map(src.get("current")), _map(src.get("metric"))
        out["pods"] = _set(metricName=metric.get("name") or "", currentAverageValue=current.get("averageValue", "0"),
                           selector=metric.get("selector"))
    for key in ("resource", "containerResource"):
        if isinstance(src := m.get(key), dict):
            current = _map(src.get("current"))
            out[key] = _kept(name=src.get("name") or "", currentAverageUtilization=current.get("averageUtilization"),
                             currentAverageValue=_quantity(current.get("averageValue", "0")))
            if key == "containerResource":
                out[key]["container"] = src.get("container") or ""
    if isinstance(src := m.get("external"), dict):
        current, metric = _map(src.get("current")), _map(src.get("metric"))
        out["external"] = _set(metricName=metric.get("name") or "", metricSelector=metric.get("selector"),
                               currentValue=current.get("value", "0"), currentAverageValue=current.get("averageValue"))
    return out


def to_v1(obj: Obj) -> Obj:
    """A stored (v2) HPA in the autoscaling/v1 form (a new dict; see the module docstring)."""
    out = copy.deepcopy(obj)
    out["apiVersion"] = V1
    md = out.setdefault("metadata", {})
    annotations = {k: v for k, v in (md.get("annotations") or {}).items() if k not in _ROUND_TRIP}
    spec = _map(out.get("spec"))
    metrics = _dicts(spec.pop("metrics", None))
    behavior = spec.pop("behavior", None)
    others = []
    first_cpu = True
    for m in metrics:
        res = _map(m.get("resource"))
        util = _map(res.get("target")).get("averageUtilization")
        is_cpu = m.get("type") == "Resource" and res.get("name") == "cpu"
        if is_cpu and first_cpu:  # the first cpu metric gives the v1 field, when it is a utilization
            first_cpu = False
            if util is not None:
                spec["targetCPUUtilizationPercentage"] = util
        if is_cpu and util is not None:  # every cpu utilization target stays out of the annotation
            continue
        others.append(_metric_to_v1(m))
    if others:
        annotations[METRICS_ANNOTATION] = json.dumps(others, separators=(",", ":"))
    if behavior is not None:
        annotations[BEHAVIOR_ANNOTATION] = json.dumps(behavior, separators=(",", ":"))
    status = _map(out.get("status"))
    if status or "status" in out:
        conditions = status.pop("conditions", None)
        current = status.pop("currentMetrics", None)
        for m in _dicts(current):
            res = _map(m.get("resource"))
            util = _map(res.get("current")).get("averageUtilization")
            if m.get("type") == "Resource" and res.get("name") == "cpu" and util is not None:
                status["currentCPUUtilizationPercentage"] = util
        if current:
            annotations[CURRENT_METRICS_ANNOTATION] = json.dumps([_metric_status_to_v1(m) for m in _dicts(current)],
                                                                 separators=(",", ":"))
        status.setdefault("currentReplicas", 0)
        status.setdefault("desiredReplicas", 0)
        if conditions:  # the v1 condition's fields in Go's order
            annotations[CONDITIONS_ANNOTATION] = json.dumps(
                [{k: c[k] for k in _V1_CONDITION_FIELDS if k in c} | {k: v for k, v in c.items()
                                                                       if k not in _V1_CONDITION_FIELDS}
                 for c in _dicts(conditions)], separators=(",", ":"))
        out["status"] = status
    if annotations:
        md["annotations"] = annotations
    else:
        md.pop("annotations", None)
    return out


# --- strategies -----------------------------------------------------------------------------------


class HorizontalPodAutoscalerStrategy(Strategy):
    """HPAs (autoscaling/v2, the stored form): defaults; status the Go zero value on create, kept
    on update; ValidateHorizontalPodAutoscaler(Update); a status write must keep
    ``currentReplicas`` and ``desiredReplicas`` non-negative. autoscaling/v1 is served by
    :class:`HorizontalPodAutoscalerV1Strategy`."""

    field_labels = frozenset()

    def __init__(self) -> None:
        super().__init__(defaulter=hpa_defaults)
        self.versions = {"v1": HorizontalPodAutoscalerV1Strategy(self)}

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        super().prepare_create(reg, rk, obj)
        obj["status"] = {"desiredReplicas": 0, "currentMetrics": None}

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        return validate_object(rk, obj, old) + hpa_spec_causes(_map(obj.get("spec")))

    def prepare_status_update(self, new: Obj, old: Obj) -> None:
        """The status as Go's struct writes it: ``desiredReplicas`` and ``currentMetrics`` always
        there (0 and null when unset)."""
        if isinstance(new.get("status"), dict):
            new["status"].setdefault("desiredReplicas", 0)
            new["status"].setdefault("currentMetrics", None)

    def validate_status(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj) -> list[FieldCause]:
        status = _map(obj.get("status"))
        out = validate_object(rk, obj, old)
        for key in ("currentReplicas", "desiredReplicas"):
            value = status.get(key)
            if isinstance(value, int) and value < 0:
                out.append(field_invalid(f"status.{key}", value, "must be greater than or equal to 0"))
        return out


class HorizontalPodAutoscalerV1Strategy(HorizontalPodAutoscalerStrategy):
    """autoscaling/v1 HPAs: stored in the v2 form (:func:`to_v2`, :func:`to_v1`); defaulted
    (minReplicas 1) and validated in that form, as upstream validates the internal one."""

    converts = True

    def __init__(self, v2: HorizontalPodAutoscalerStrategy) -> None:
        Strategy.__init__(self, defaulter=_v1_defaults)
        self.versions = {}
        self._v2 = v2

    def to_storage(self, obj: Obj) -> Obj:
        return to_v2(obj) if obj.get("apiVersion") == V1 else obj

    def from_storage(self, obj: Obj) -> Obj:
        return to_v1(obj) if obj.get("apiVersion") != V1 else obj

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        """The zero status, as v2's; the round-trip annotations must decode (a 400 otherwise,
        :func:`_round_trip_lists`), and those of the status are dropped: upstream converts
        them into the status, which PrepareForCreate then resets."""
        Strategy.prepare_create(self, reg, rk, obj)
        obj["status"] = {"currentReplicas": 0, "desiredReplicas": 0}
        md = obj.get("metadata")
        annotations = md.get("annotations") if isinstance(md, dict) else None
        if isinstance(annotations, dict):
            _round_trip_lists(annotations)
            for key in (CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION):
                annotations.pop(key, None)

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        return validate_object(rk, obj, old) + hpa_spec_causes(_map(to_v2(obj).get("spec")))


def _v1_defaults(obj: Obj) -> None:
    """SetDefaults_HorizontalPodAutoscaler (v1): ``minReplicas`` 1 (the cpu target is defaulted
    in the conversion)."""
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict) and spec.get("minReplicas") is None:
        spec["minReplicas"] = 1


register("autoscaling", "horizontalpodautoscalers", HorizontalPodAutoscalerStrategy())
