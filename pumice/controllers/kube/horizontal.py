"""The horizontal pod autoscaler controller, as kube-controller-manager runs it: it reads each
target's ``scale``, computes a replica count from the HPA's metrics (Resource and
ContainerResource metrics, from the metrics.k8s.io PodMetrics the API server serves), bounds,
stabilizes and rate-limits it, writes it to the target's scale and reports in the HPA's status,
conditions and Events.

Each HPA is reconciled on change and every 15 s (``--horizontal-pod-autoscaler-sync-period``):

1. the target's ``scale`` subresource is read (``scaleTargetRef``: its API group and kind, the
   given version or else any version the server serves of that group, as upstream's RESTMapper
   resolves a GroupKind); failing that: Event and condition ``AbleToScale`` False
   ``FailedGetScale``; else ``AbleToScale`` True ``SucceededGetScale``;
2. a target at 0 replicas (with ``minReplicas`` above 0) is left alone: ``ScalingActive`` False
   ``ScalingDisabled``; above ``maxReplicas`` it is scaled down to it, below ``minReplicas`` up
   to it ("Current number of replicas above Spec.MaxReplicas" / "below Spec.MinReplicas");
3. within the bounds the metrics decide (computeReplicasForMetrics): the scale's selector must
   parse and its Pods must not be selected by another HPA (``SelectorRequired`` /
   ``InvalidSelector`` / ``AmbiguousSelector``); each metric proposes a count
   (:mod:`pumice.controllers.kube.replica_calculator`: tolerance 0.1 or the scaling rules'
   ``tolerance`` (HPAConfigurableTolerance, on since 1.35), Pod-level requests, missing and unready Pods,
   cpu initialization period 300 s, initial readiness delay 30 s) and its ``currentMetrics``
   entry; the largest proposal wins (``ScalingActive`` True ``ValidMetricFound`` "the HPA was
   able to successfully calculate a replica count from cpu resource utilization (percentage of
   request)"). A metric that cannot be read is a Warning Event (``FailedGetResourceMetric``,
   ``FailedGetContainerResourceMetric``, ``FailedGetPodsMetric``, ``FailedGetObjectMetric``,
   ``FailedGetExternalMetric``) and an empty ``currentMetrics`` entry; when all fail, or some
   fail and the rest would scale down, ``ScalingActive`` False with the first one's reason and a
   ``FailedComputeMetricsReplicas`` Warning ``invalid metrics (N invalid out of M), first error
   is: ...``, and the replicas stay;
4. the proposal is normalized: without ``spec.behavior``, the highest recommendation of the last
   300 s (``--horizontal-pod-autoscaler-downscale-stabilization``; ``AbleToScale``
   ``ScaleDownStabilized`` / ``ReadyForNewScale``), then ``minReplicas``, ``maxReplicas`` and
   the scale-up limit max(2 x current, 4) (``ScalingLimited`` ``TooFewReplicas`` /
   ``TooManyReplicas`` / ``ScaleUpLimit`` / ``DesiredWithinRange``); with it, the scale-up and
   scale-down stabilization windows (``ScaleUpStabilized`` / ``ScaleDownStabilized``) and the
   policies of each direction (Pods / Percent per ``periodSeconds``, ``selectPolicy`` Max, Min
   or Disabled) over the scale events of their periods (``ScaleUpLimit`` / ``ScaleDownLimit``);
5. a changed count is written to the scale: ``AbleToScale`` True ``SucceededRescale`` and a
   Normal ``SuccessfulRescale`` Event ``New size: N; reason: cpu resource utilization
   (percentage of request) above target`` (or ``All metrics below target``); a failed write is
   ``FailedRescale`` and ``AbleToScale`` False ``FailedUpdateScale``.

The status (``currentReplicas``, ``desiredReplicas``, ``lastScaleTime`` on a rescale,
``currentMetrics``, ``conditions``) is written through ``horizontalpodautoscalers/status`` only
when it changed. Recommendations and scale events live in memory, per HPA, stamped by the
project clock, as upstream keeps them in the controller.

Mirrors: kubernetes pkg/controller/podautoscaler/horizontal.go (reconcileAutoscaler,
computeReplicasForMetrics, validateAndParseSelector, computeReplicasForMetric,
computeStatusForResourceMetricGeneric, stabilizeRecommendation, normalizeDesiredReplicas,
normalizeDesiredReplicasWithBehaviors, stabilizeRecommendationWithBehaviors,
convertDesiredReplicasWithBehaviorRate, convertDesiredReplicasWithRules,
calculateScaleUpLimitWithScalingRules, calculateScaleDownLimitWithBehaviors, storeScaleEvent,
scaleForResourceMappings, getUnableComputeReplicaCountCondition, setStatus), replica_calculator.go
and metrics/client.go (the error texts).

Deviates: Pods, Object and External metrics need the custom.metrics.k8s.io and
external.metrics.k8s.io APIs, which pumice does not serve: they fail as upstream's do when those
APIs are not registered.

Not followed, on purpose (upstream as of k8s.io/api 10b39a39 and kubernetes/enhancements 64765b4,
July 2026): HPA generation tracking (kubernetes#138228: ``metadata.generation`` and
``status.observedGeneration``) and ``observedGeneration`` on each HPA condition (kubernetes#138653),
both in 1.37, need the API server's 1.37 HPA strategy; pumice's API server answers as v1.34, which keeps no
generation on an HPA; the ``ScaledToZero`` condition of HPAScaleToZero (KEP-2021: alpha, off by
default, through 1.36; beta planned for 1.37): with the gate off the controller never writes it,
and the API server refuses ``minReplicas: 0`` (pumice.apiserver.autoscaling).
"""

from __future__ import annotations

import copy
import logging
import math
from dataclasses import dataclass
from typing import Any, Protocol

from pumice._util.clock import Clock, rfc3339
from pumice.api import Obj, meta
from pumice.api.quantity import QuantityError, format_millis, milli_value_int64, parse_quantity
from pumice.api.scheme import HORIZONTAL_POD_AUTOSCALER, POD
from pumice.api.selectors import LabelSelector, SelectorError, format_label_selector, parse_label_selector
from pumice.client.base import ApiError, is_conflict, is_not_found
from pumice.client.informer import Informer
from pumice.controllers.kube.options import KubeOptions
from pumice.controllers.kube.replica_calculator import (
    MetricsError,
    PodMetric,
    ReplicaCalculator,
    Tolerances,
    pod_metrics_info,
)
from pumice.runtime import Request, Result
from pumice.runtime.events import EventRecorder
from pumice.runtime.manager import Manager

__all__ = ["DOWNSCALE_STABILIZATION_WINDOW", "SYNC_PERIOD", "ApiPodMetrics", "HorizontalReconciler",
           "PodMetricsSource", "metric_failure"]

log = logging.getLogger(__name__)

#: seconds between two reconciles of one HPA (--horizontal-pod-autoscaler-sync-period)
SYNC_PERIOD = 15.0
#: --horizontal-pod-autoscaler-downscale-stabilization, seconds
DOWNSCALE_STABILIZATION_WINDOW = 300.0
ABOVE_MAX = "Current number of replicas above Spec.MaxReplicas"
BELOW_MIN = "Current number of replicas below Spec.MinReplicas"
SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0
#: what the custom metrics client answers when custom.metrics.k8s.io is not served
NO_CUSTOM_METRICS_API = "no custom metrics API (custom.metrics.k8s.io) registered"
METRICS_PATH = "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods"


class RawClient(Protocol):
    """What the controller needs of its client besides the informers: raw REST calls (the
    ``scale`` subresource, discovery, metrics.k8s.io) and resolving the target's kind."""

    async def request(self, method: str, path: str, *, body: Any = None, content_type: str = "application/json",
                      params: Any = None) -> Any: ...

    async def resolve(self, api_version: str, kind: str) -> Any: ...

    async def update_status(self, obj: Obj) -> Obj: ...


class PodMetricsSource(Protocol):
    """Where the controller reads Pod usage (upstream's resource metrics client)."""

    async def pod_metrics(self, namespace: str, selector: str) -> list[Obj]:
        """The PodMetrics (metrics.k8s.io/v1beta1 objects) of the Pods ``selector`` (label
        selector text) selects in ``namespace``.

        Raises:
            MetricsError: ``unable to fetch metrics from resource metrics API: <why>``.
        """
        ...


class ApiPodMetrics:
    """:class:`PodMetricsSource` over the API server's metrics.k8s.io (``GET
    /apis/metrics.k8s.io/v1beta1/namespaces/<ns>/pods?labelSelector=...``)."""

    def __init__(self, client: RawClient) -> None:
        self.client = client

    async def pod_metrics(self, namespace: str, selector: str) -> list[Obj]:
        try:
            doc = await self.client.request("GET", METRICS_PATH.format(namespace=namespace),
                                            params={"labelSelector": selector} if selector else None)
        except ApiError as e:
            raise MetricsError(f"unable to fetch metrics from resource metrics API: {e}") from None
        return [i for i in (doc or {}).get("items") or [] if isinstance(i, dict)]


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def metric_failure(metric: Obj, namespace: str) -> tuple[str, str, str] | None:
    """``(reason, error, wrapped)`` of a Pods, Object or External metric (pumice serves neither
    custom.metrics.k8s.io nor external.metrics.k8s.io, so they always fail as upstream's do
    without those APIs), or of an unknown metric type; None for a Resource or
    ContainerResource metric. ``reason`` and ``error`` make the Warning Event and the
    ScalingActive condition (getUnableComputeReplicaCountCondition), ``wrapped`` is what
    computeReplicasForMetric returns."""
    mtype = str(metric.get("type") or "")
    if mtype in ("Resource", "ContainerResource"):
        return None
    key = {"Pods": "pods", "Object": "object", "External": "external"}.get(mtype)
    src = _dict(metric.get(key)) if key else {}
    target = _dict(src.get("target"))
    metric_name = str(_dict(src.get("metric")).get("name") or "")
    cause = f"unable to fetch metrics from custom metrics API: {NO_CUSTOM_METRICS_API}"
    if key == "pods":
        error = f"unable to get metric {metric_name}: {cause}"
        return "FailedGetPodsMetric", error, f"failed to get pods metric value: {error}"
    if key == "object":
        ref = _dict(src.get("describedObject"))
        # upstream's format puts the kind, namespace and name before the cause
        error = f"unable to get metric {metric_name}: {ref.get('kind', '')} on {namespace} {ref.get('name', '')}/{cause}"
        returned = error
        if target.get("type") == "AverageValue" and target.get("averageValue") is not None:
            returned = f"failed to get {metric_name} object metric: {error}"
        elif target.get("type") != "Value" or target.get("value") is None:
            error = returned = "invalid object metric source: neither a value target nor an average value target was set"
        return "FailedGetObjectMetric", error, f"failed to get object metric value: {returned}"
    if key == "external":
        selector = format_label_selector(_dict(src.get("metric")).get("selector"))
        cause = ("unable to fetch metrics from external metrics API: the server could not find the requested resource "
                 f"(get {metric_name}.external.metrics.k8s.io)")
        error = f"unable to get external metric {namespace}/{metric_name}/{selector}: {cause}"
        if target.get("averageValue") is not None:
            returned = f"failed to get {metric_name} external metric: {error}"
        elif target.get("value") is not None:
            returned = f"failed to get external metric {metric_name}: {error}"
        else:
            error = returned = "invalid external metric source: neither a value target nor an average value target was set"
        return "FailedGetExternalMetric", error, f"failed to get {metric_name} external metric value: {returned}"
    error = f'unknown metric source type "{mtype}"'
    return "InvalidMetricSourceType", error, error


def _spec_changed(old: Obj, new: Obj) -> bool:
    """Updates reconcile at once only when the spec changed; the controller's own status writes
    wait for the next sync (upstream queues every update behind the sync period)."""
    return old.get("spec") != new.get("spec")


@dataclass
class _ScaleEvent:
    """timestampedScaleEvent: a replica change (absolute), when, and whether it is outdated."""

    change: int
    at: float
    outdated: bool = False


@dataclass
class _Proposal:
    """One metric's result: the replica count, its description, or the failure."""

    replicas: int = 0
    name: str = ""
    condition: tuple[str, str] | None = None  # (reason, message) of ScalingActive False
    error: str = ""


class HorizontalReconciler:
    """Reconciles HorizontalPodAutoscalers (see the module docstring)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> HorizontalReconciler:
        """Build the controller and register it (HPAs, autoscaling/v2; Pods for the metrics)."""
        hpa = cls(mgr.client, hpas=mgr.informers.informer(HORIZONTAL_POD_AUTOSCALER),
                  pods=mgr.informers.informer(POD), clock=mgr.clock,
                  recorder=mgr.event_recorder("horizontal-pod-autoscaler"))
        mgr.controller("horizontalpodautoscaling").for_(HORIZONTAL_POD_AUTOSCALER, _spec_changed).complete(hpa)
        return hpa

    def __init__(self, client: Any, *, hpas: Informer, clock: Clock, recorder: EventRecorder,
                 pods: Informer | None = None, metrics: PodMetricsSource | None = None,
                 sync_period: float = SYNC_PERIOD, downscale_stabilization_window: float = DOWNSCALE_STABILIZATION_WINDOW,
                 calculator: ReplicaCalculator | None = None) -> None:
        """Args:
            client: the API client (:class:`RawClient`).
            hpas, pods: informers of HPAs and Pods (the Pods a target's selector picks).
            metrics: where Pod usage is read (default :class:`ApiPodMetrics` over ``client``).
            sync_period, downscale_stabilization_window: seconds.
            calculator: tolerance and readiness periods (default upstream's flags).
        """
        self.client: RawClient = client
        self.hpas = hpas
        self.pods = pods
        self.metrics: PodMetricsSource = metrics if metrics is not None else ApiPodMetrics(client)
        self.clock = clock
        self.recorder = recorder
        self.sync_period = sync_period
        self.downscale_stabilization_window = downscale_stabilization_window
        self.calculator = calculator or ReplicaCalculator()
        self._recommendations: dict[str, list[tuple[int, float]]] = {}
        self._scale_up_events: dict[str, list[_ScaleEvent]] = {}
        self._scale_down_events: dict[str, list[_ScaleEvent]] = {}
        self._selectors: dict[tuple[str, str], LabelSelector] = {}

    def _condition(self, status: Obj, ctype: str, value: str, reason: str, message: str) -> None:
        """setConditionInList: the condition's status, reason and message; its
        lastTransitionTime only when the status flips (a new condition goes last)."""
        meta.set_condition(status, {"type": ctype, "status": value, "reason": reason, "message": message},
                           rfc3339(self.clock.now()))

    def _forget(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        self._recommendations.pop(key, None)
        self._scale_up_events.pop(key, None)
        self._scale_down_events.pop(key, None)
        self._selectors.pop((namespace, name), None)

    async def reconcile(self, req: Request) -> Result:
        stored = self.hpas.store.get(req.namespace, req.name)
        if stored is None or stored["metadata"].get("deletionTimestamp"):
            self._forget(req.namespace or "", req.name)
            return Result()
        key = f"{req.namespace}/{req.name}"
        hpa = copy.deepcopy(stored)
        original = copy.deepcopy(stored.get("status") or {})
        status: Obj = copy.deepcopy(original)
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        got = await self._get_scale(hpa, status, ref)
        if got is None:
            await self._write_status(hpa, original, status)
            return Result(requeue_after=self.sync_period)
        scale, path = got
        self._condition(status, "AbleToScale", "True", "SucceededGetScale",
                        "the HPA controller was able to get the target's current scale")
        current = _int((scale.get("spec") or {}).get("replicas"))
        if key not in self._recommendations:  # recordInitialRecommendation
            self._recommendations[key] = [(current, self.clock.now())]
        lo = spec.get("minReplicas")
        lo = 1 if lo is None else _int(lo, 1)
        hi = _int(spec.get("maxReplicas"))
        rescale, desired, reason = True, 0, ""
        metric_statuses: list[Obj] | None = None
        if current == 0 and lo != 0:
            rescale = False
            self._condition(status, "ScalingActive", "False", "ScalingDisabled",
                            "scaling is disabled since the replica count of the target is zero")
        elif current > hi:
            desired, reason = hi, ABOVE_MAX
        elif current < lo:
            desired, reason = lo, BELOW_MIN
        else:
            proposed, metric_name, metric_statuses, error = await self._compute_replicas_for_metrics(hpa, status, scale)
            if proposed == -1:
                self._set_status(status, current, _int(status.get("desiredReplicas")), metric_statuses, False)
                await self._write_status(hpa, original, status)
                self.recorder.event(hpa, "Warning", "FailedComputeMetricsReplicas", error)
                return Result(requeue_after=self.sync_period)
            if error:  # some metrics failed; the others still scale up
                log.info("HPA %s: %s", key, error)
            rescale_metric = ""
            if proposed > desired:
                desired, rescale_metric = proposed, metric_name
            if desired > current:
                reason = f"{rescale_metric} above target"
            if desired < current:
                reason = "All metrics below target"
            if spec.get("behavior") is None:
                desired = self._normalize(status, key, current, desired, lo, hi)
            else:
                desired = self._normalize_with_behaviors(status, key, spec["behavior"], current, desired, lo, hi)
            rescale = desired != current
        if rescale:
            if not await self._rescale(hpa, status, scale, path, desired, reason):
                self._set_status(status, current, _int(status.get("desiredReplicas")), metric_statuses, False)
                await self._write_status(hpa, original, status)
                return Result(requeue_after=self.sync_period)
            self._store_scale_event(spec.get("behavior"), key, current, desired)
        else:
            desired = current
        self._set_status(status, current, desired, metric_statuses, rescale)
        await self._write_status(hpa, original, status)
        return Result(requeue_after=self.sync_period)

    # -- the target's scale --------------------------------------------------------------------

    async def _scale_path(self, ns: str, ref: Obj) -> str:
        """The path of the target's ``scale`` subresource: its kind in the given apiVersion, or
        in the group's preferred and then other served versions (RESTMappings of the GroupKind).

        Raises:
            ApiError: the apiVersion does not parse, or the group serves no such kind (404
                ``no matches for kind "K" in group "G"``).
        """
        api_version = str(ref.get("apiVersion") or "")
        kind = str(ref.get("kind") or "")
        name = str(ref.get("name") or "")
        if api_version.count("/") > 1:
            raise ApiError(400, "BadRequest", f"unexpected GroupVersion string: {api_version}", {})
        group = api_version.split("/")[0] if "/" in api_version else ""
        try:
            rk = await self.client.resolve(api_version, kind)
            return str(rk.path(ns, name, "scale"))
        except ApiError as e:
            if e.code != 404:
                raise
        versions: list[str] = []
        try:
            doc = await self.client.request("GET", f"/apis/{group}" if group else "/api")
        except ApiError as e:
            if e.code != 404:
                raise
            doc = {}
        if group:
            preferred = _dict(doc.get("preferredVersion")).get("version")
            versions = [str(v.get("version")) for v in doc.get("versions") or [] if isinstance(v, dict)]
            versions.sort(key=lambda v: v != preferred)
        else:
            versions = [str(v) for v in doc.get("versions") or []]
        for version in versions:
            gv = f"{group}/{version}" if group else version
            if gv == api_version:
                continue
            try:
                rk = await self.client.resolve(gv, kind)
            except ApiError as e:
                if e.code != 404:
                    raise
                continue
            return str(rk.path(ns, name, "scale"))
        raise ApiError(404, "NotFound", f'no matches for kind "{kind}" in group "{group}"', {})

    async def _get_scale(self, hpa: Obj, status: Obj, ref: Obj) -> tuple[Obj, str] | None:
        """The target's Scale and its path, or None after the FailedGetScale Event and condition."""
        ns = hpa["metadata"].get("namespace") or ""
        try:
            path = await self._scale_path(ns, ref)
            scale: Obj = await self.client.request("GET", path)
        except ApiError as e:
            self.recorder.event(hpa, "Warning", "FailedGetScale", str(e))
            self._condition(status, "AbleToScale", "False", "FailedGetScale",
                            f"the HPA controller was unable to get the target's current scale: {e}")
            return None
        return scale, path

    # -- metrics ---------------------------------------------------------------------------------

    def _unable(self, hpa: Obj, reason: str, error: str) -> tuple[str, str]:
        """getUnableComputeReplicaCountCondition: the Warning Event, and the ScalingActive False
        (reason, message) to set when every metric fails."""
        self.recorder.event(hpa, "Warning", reason, error)
        return reason, f"the HPA was unable to compute the replica count: {error}"

    def _validate_selector(self, hpa: Obj, status: Obj, text: str) -> tuple[LabelSelector | None, str]:
        """validateAndParseSelector: the parsed selector, or None and the error after the Event
        and the ScalingActive False condition."""
        if not text:
            self.recorder.event(hpa, "Warning", "SelectorRequired", "selector is required")
            self._condition(status, "ScalingActive", "False", "InvalidSelector",
                            "the HPA target's scale is missing a selector")
            return None, "selector is required"
        try:
            selector = parse_label_selector(text)
        except SelectorError as e:
            msg = f"couldn't convert selector into a corresponding internal selector object: {e}"
            self.recorder.event(hpa, "Warning", "InvalidSelector", msg)
            self._condition(status, "ScalingActive", "False", "InvalidSelector", msg)
            return None, msg
        md = hpa["metadata"]
        ns, name = str(md.get("namespace") or ""), str(md["name"])
        self._selectors[(ns, name)] = selector
        owners: set[tuple[str, str]] = set()
        for pod in self._pods(ns, selector):
            labels = (pod.get("metadata") or {}).get("labels") or {}
            owners |= {k for k, sel in self._selectors.items() if k[0] == ns and sel.matches(labels)}
        if len(owners) > 1:
            keys = " ".join(f"{k[0]}/{k[1]}" for k in sorted(owners))
            msg = f"pods by selector {text} are controlled by multiple HPAs: [{keys}]"
            self.recorder.event(hpa, "Warning", "AmbiguousSelector", msg)
            self._condition(status, "ScalingActive", "False", "AmbiguousSelector", msg)
            return None, msg
        return selector, ""

    def _pods(self, namespace: str, selector: LabelSelector) -> list[Obj]:
        if self.pods is None:
            return []
        return self.pods.store.list(namespace, selector)

    async def _compute_replicas_for_metrics(self, hpa: Obj, status: Obj, scale: Obj
                                            ) -> tuple[int, str, list[Obj] | None, str]:
        """computeReplicasForMetrics: ``(replicas, metric description, metric statuses, error)``;
        replicas -1 when nothing can be scaled on (the error then says why)."""
        selector, error = self._validate_selector(hpa, status, str((scale.get("status") or {}).get("selector") or ""))
        if selector is None:
            return -1, "", None, error
        spec_replicas = _int((scale.get("spec") or {}).get("replicas"))
        metrics = [m if isinstance(m, dict) else {} for m in (hpa.get("spec") or {}).get("metrics") or []]
        statuses: list[Obj] = []
        replicas, name = 0, ""
        invalid = 0
        first: _Proposal | None = None
        for metric in metrics:
            entry: Obj = {"type": ""}
            proposal = await self._compute_replicas_for_metric(hpa, metric, spec_replicas, selector, entry)
            statuses.append(entry)
            if proposal.error:
                if first is None:
                    first = proposal
                invalid += 1
                continue
            if replicas == 0 or proposal.replicas > replicas:
                replicas, name = proposal.replicas, proposal.name
        error = ""
        if first is not None:
            error = f"invalid metrics ({invalid} invalid out of {len(metrics)}), first error is: {first.error}"
        if invalid >= len(metrics) or (invalid > 0 and replicas < spec_replicas):
            if first is not None and first.condition is not None:
                self._condition(status, "ScalingActive", "False", *first.condition)
            return -1, "", statuses, error
        self._condition(status, "ScalingActive", "True", "ValidMetricFound",
                        f"the HPA was able to successfully calculate a replica count from {name}")
        return replicas, name, statuses, error

    async def _compute_replicas_for_metric(self, hpa: Obj, metric: Obj, spec_replicas: int, selector: LabelSelector,
                                           entry: Obj) -> _Proposal:
        """computeReplicasForMetric: one metric's proposal; ``entry`` (its currentMetrics
        entry) is filled in when it succeeds."""
        ns = str(hpa["metadata"].get("namespace") or "")
        mtype = metric.get("type")
        failure = metric_failure(metric, ns)
        if failure is not None:
            reason, error, wrapped = failure
            return _Proposal(condition=self._unable(hpa, reason, error), error=wrapped)
        key = "resource" if mtype == "Resource" else "containerResource"
        src = _dict(metric.get(key))
        resource = str(src.get("name") or "")
        container = str(src.get("container") or "") if key == "containerResource" else ""
        try:
            replicas, current, name = await self._resource_metric(ns, spec_replicas, _dict(src.get("target")), resource,
                                                                   container, selector, key, self._tolerances(hpa))
        except MetricsError as e:
            reason = "FailedGetResourceMetric" if key == "resource" else "FailedGetContainerResourceMetric"
            what = f"{resource} resource" if key == "resource" else f"{container} container"
            return _Proposal(condition=self._unable(hpa, reason, str(e)),
                             error=f"failed to get {what} metric value: {e}")
        entry.clear()
        entry["type"] = mtype
        entry[key] = {"name": resource, **({"container": container} if key == "containerResource" else {}),
                      "current": current}
        return _Proposal(replicas=replicas, name=name)

    async def _resource_metric(self, namespace: str, current_replicas: int, target: Obj, resource: str,
                               container: str, selector: LabelSelector, source: str, tolerances: Tolerances
                               ) -> tuple[int, Obj, str]:
        """computeStatusForResourceMetricGeneric: ``(replicas, MetricValueStatus, description)``.

        Raises:
            MetricsError: upstream's text (``failed to get cpu utilization: ...``).
        """
        average_value = target.get("averageValue")
        if average_value is not None:
            try:
                target_usage = milli_value_int64(average_value)
                replicas, usage = self.calculator.raw_resource_replicas(
                    current_replicas, target_usage, resource, self._pods(namespace, selector),
                    await self._read(namespace, selector, resource, container), self.clock.now(), tolerances)
            except (MetricsError, QuantityError) as e:
                raise MetricsError(f"failed to get {resource} usage: {e}") from None
            return replicas, {"averageValue": format_millis(usage)}, f"{resource} resource"
        utilization = target.get("averageUtilization")
        if not isinstance(utilization, int) or isinstance(utilization, bool):
            raise MetricsError("invalid resource metric source: neither an average utilization target nor an average "
                               "value (usage) target was set")
        try:
            replicas, percent, raw = self.calculator.resource_replicas(
                current_replicas, utilization, resource, self._pods(namespace, selector),
                await self._read(namespace, selector, resource, container), self.clock.now(), container, tolerances)
        except MetricsError as e:
            raise MetricsError(f"failed to get {resource} utilization: {e}") from None
        what = "container resource" if source == "containerResource" else "resource"
        return (replicas, {"averageValue": format_millis(raw), "averageUtilization": percent},
                f"{resource} {what} utilization (percentage of request)")

    def _tolerances(self, hpa: Obj) -> Tolerances:
        """tolerancesForHpa: the controller's tolerance, or a behavior rule's ``tolerance``
        (feature gate HPAConfigurableTolerance, beta and on since 1.35)."""
        out = Tolerances(self.calculator.tolerance, self.calculator.tolerance)
        behavior = (hpa.get("spec") or {}).get("behavior")
        if not isinstance(behavior, dict):
            return out
        down = _dict(behavior.get("scaleDown")).get("tolerance")
        up = _dict(behavior.get("scaleUp")).get("tolerance")
        try:
            return Tolerances(float(parse_quantity(down)) if down is not None else out.scale_down,
                              float(parse_quantity(up)) if up is not None else out.scale_up)
        except QuantityError:
            return out

    async def _read(self, namespace: str, selector: LabelSelector, resource: str, container: str
                    ) -> dict[str, PodMetric]:
        """GetResourceMetric: the Pods' readings of ``resource``.

        Raises:
            MetricsError: ``unable to get metrics for resource <r>: ...``.
        """
        try:
            items = await self.metrics.pod_metrics(namespace, str(selector))
            if not items:
                raise MetricsError("no metrics returned from resource metrics API")
            try:
                return pod_metrics_info(items, resource, container)
            except MetricsError as e:
                raise MetricsError(f"failed to get container metrics: {e}") from None
        except MetricsError as e:
            raise MetricsError(f"unable to get metrics for resource {resource}: {e}") from None

    # -- normalization ---------------------------------------------------------------------------

    def _normalize(self, status: Obj, key: str, current: int, proposed: int, lo: int, hi: int) -> int:
        """normalizeDesiredReplicas (no ``behavior``): the downscale stabilization, then the
        bounds and the scale-up limit, with their conditions."""
        now = self.clock.now()
        stabilized = proposed
        recs = self._recommendations.setdefault(key, [])
        old = -1
        for i, (rec, at) in enumerate(recs):
            if at < now - self.downscale_stabilization_window:
                old = i
            elif rec > stabilized:
                stabilized = rec
        if old >= 0:
            recs[old] = (proposed, now)
        else:
            recs.append((proposed, now))
        if stabilized != proposed:
            self._condition(status, "AbleToScale", "True", "ScaleDownStabilized",
                            "recent recommendations were higher than current one, applying the highest recent "
                            "recommendation")
        else:
            self._condition(status, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
        limit = int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))
        if hi > limit:
            top, reason, message = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the " \
                                                          "maximum scale rate"
        else:
            top, reason, message = hi, "TooManyReplicas", "the desired replica count is more than the maximum replica " \
                                                          "count"
        desired = stabilized
        if stabilized < lo:
            desired, reason, message = lo, "TooFewReplicas", "the desired replica count is less than the minimum " \
                                                             "replica count"
        elif stabilized > top:
            desired = top
        else:
            reason, message = "DesiredWithinRange", "the desired count is within the acceptable range"
        self._condition(status, "ScalingLimited", "False" if desired == stabilized else "True", reason, message)
        return desired

    def _normalize_with_behaviors(self, status: Obj, key: str, behavior: Obj, current: int, proposed: int, lo: int,
                                  hi: int) -> int:
        """normalizeDesiredReplicasWithBehaviors: the two stabilization windows, then the
        policies' rate limits and the bounds, with their conditions."""
        up = _dict(behavior.get("scaleUp"))
        down = dict(_dict(behavior.get("scaleDown")))
        if down.get("stabilizationWindowSeconds") is None:  # maybeInitScaleDownStabilizationWindow
            down["stabilizationWindowSeconds"] = int(self.downscale_stabilization_window)
        now = self.clock.now()
        up_cutoff = now - _int(up.get("stabilizationWindowSeconds"))
        down_cutoff = now - _int(down.get("stabilizationWindowSeconds"))
        up_rec = down_rec = proposed
        recs = self._recommendations.setdefault(key, [])
        old = -1
        for i, (rec, at) in enumerate(recs):
            if at > up_cutoff:
                up_rec = min(rec, up_rec)
            if at > down_cutoff:
                down_rec = max(rec, down_rec)
            if at < up_cutoff and at < down_cutoff:
                old = i
        stabilized = max(current, up_rec)
        stabilized = min(stabilized, down_rec)
        if old >= 0:
            recs[old] = (proposed, now)
        else:
            recs.append((proposed, now))
        if stabilized != proposed:
            if proposed >= current:
                self._condition(status, "AbleToScale", "True", "ScaleUpStabilized",
                                "recent recommendations were lower than current one, applying the lowest recent "
                                "recommendation")
            else:
                self._condition(status, "AbleToScale", "True", "ScaleDownStabilized",
                                "recent recommendations were higher than current one, applying the highest recent "
                                "recommendation")
        else:
            self._condition(status, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
        desired, reason, message = self._behavior_rate(key, up, down, current, stabilized, lo, hi)
        self._condition(status, "ScalingLimited", "False" if desired == stabilized else "True", reason, message)
        return desired

    def _behavior_rate(self, key: str, up: Obj, down: Obj, current: int, desired: int, lo: int, hi: int
                       ) -> tuple[int, str, str]:
        """convertDesiredReplicasWithBehaviorRate: ``(replicas, ScalingLimited reason, message)``."""
        ups, downs = self._scale_up_events.get(key, []), self._scale_down_events.get(key, [])
        if desired > current:
            limit = max(self._scale_limit(current, ups, downs, up, True), current)
            if hi > limit:
                top, reason, message = limit, "ScaleUpLimit", ("the desired replica count is increasing faster than "
                                                               "the maximum scale rate")
            else:
                top, reason, message = hi, "TooManyReplicas", "the desired replica count is more than the maximum " \
                                                              "replica count"
            if desired > top:
                return top, reason, message
        elif desired < current:
            limit = min(self._scale_limit(current, ups, downs, down, False), current)
            if lo < limit:
                bottom, reason, message = limit, "ScaleDownLimit", ("the desired replica count is decreasing faster "
                                                                    "than the maximum scale rate")
            else:
                bottom, reason, message = lo, "TooFewReplicas", "the desired replica count is less than the minimum " \
                                                                "replica count"
            if desired < bottom:
                return bottom, reason, message
        return desired, "DesiredWithinRange", "the desired count is within the acceptable range"

    def _changed_in(self, period: int, events: list[_ScaleEvent]) -> int:
        """getReplicasChangePerPeriod: the replicas changed by the events of the last ``period`` s."""
        cutoff = self.clock.now() - period
        return sum(e.change for e in events if e.at > cutoff)

    def _scale_limit(self, current: int, ups: list[_ScaleEvent], downs: list[_ScaleEvent], rules: Obj,
                     scale_up: bool) -> int:
        """calculateScaleUpLimitWithScalingRules / calculateScaleDownLimitWithBehaviors: the
        furthest count the policies allow (``selectPolicy`` Max: the largest change, Min: the
        smallest, Disabled: none)."""
        select = rules.get("selectPolicy") or "Max"
        if select == "Disabled":
            return current
        results: list[int] = []
        for policy in rules.get("policies") or []:
            period = _int(policy.get("periodSeconds"))
            start = current - self._changed_in(period, ups) + self._changed_in(period, downs)
            value = _int(policy.get("value"))
            if policy.get("type") == "Pods":
                results.append(start + value if scale_up else start - value)
            elif policy.get("type") == "Percent":
                results.append(math.ceil(start * (1 + value / 100)) if scale_up else int(start * (1 - value / 100)))
        if not results:
            return -(2**31) if (select == "Min") != scale_up else 2**31 - 1
        largest_change = max if scale_up else min
        smallest_change = min if scale_up else max
        return (smallest_change if select == "Min" else largest_change)(results)

    def _store_scale_event(self, behavior: Any, key: str, previous: int, new: int) -> None:
        """storeScaleEvent: remember a rescale (only with ``behavior``), reusing an event older
        than the direction's longest policy period."""
        if not isinstance(behavior, dict):
            return
        up = new > previous
        rules = _dict(behavior.get("scaleUp" if up else "scaleDown"))
        longest = max((_int(p.get("periodSeconds")) for p in rules.get("policies") or []), default=0)
        events = (self._scale_up_events if up else self._scale_down_events).setdefault(key, [])
        now = self.clock.now()
        reuse = -1
        for i, e in enumerate(events):
            if e.at < now - longest:
                e.outdated = True
            if e.outdated:
                reuse = i
        event = _ScaleEvent(abs(new - previous), now)
        if reuse >= 0:
            events[reuse] = event
        else:
            events.append(event)

    # -- writes ----------------------------------------------------------------------------------

    async def _rescale(self, hpa: Obj, status: Obj, scale: Obj, path: str, desired: int, reason: str) -> bool:
        """Write ``desired`` replicas to the target's scale: True with SucceededRescale and the
        SuccessfulRescale Event, False with FailedRescale / FailedUpdateScale."""
        ns = hpa["metadata"].get("namespace") or ""
        body = copy.deepcopy(scale)
        body.setdefault("spec", {})["replicas"] = desired
        try:
            await self.client.request("PUT", path, body=body)
        except ApiError as e:
            self.recorder.event(hpa, "Warning", "FailedRescale", f"New size: {desired}; reason: {reason}; error: {e}")
            self._condition(status, "AbleToScale", "False", "FailedUpdateScale",
                            f"the HPA controller was unable to update the target scale: {e}")
            return False
        self._condition(status, "AbleToScale", "True", "SucceededRescale",
                        f"the HPA controller was able to update the target scale to {desired}")
        self.recorder.event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
        log.info("HPA %s/%s rescaled %s to %d: %s", ns, hpa["metadata"]["name"], path, desired, reason)
        return True

    def _set_status(self, status: Obj, current: int, desired: int, metrics: list[Obj] | None, rescale: bool) -> None:
        """setStatus: current and desired replicas (0 current is left out, as Go's omitempty),
        the metric statuses, the kept conditions and lastScaleTime (now on a rescale)."""
        for key in ("currentReplicas", "desiredReplicas", "currentMetrics"):
            status.pop(key, None)
        if current:
            status["currentReplicas"] = current
        status["desiredReplicas"] = desired
        status["currentMetrics"] = metrics
        if rescale:
            status["lastScaleTime"] = rfc3339(self.clock.now())

    async def _write_status(self, hpa: Obj, original: Obj, status: Obj) -> None:
        """updateStatusIfNeeded: write the status when it differs from the stored one; a failed
        write is a FailedUpdateStatus Event (a conflict or a deleted HPA is logged and left to the
        next pass)."""
        if status == original:
            return
        try:
            await self.client.update_status({**hpa, "status": status})
        except ApiError as e:
            if is_conflict(e) or is_not_found(e):
                md = hpa.get("metadata") or {}
                log.info("HorizontalPodAutoscaler %s/%s: status not written (%s); the next pass writes it",
                         md.get("namespace"), md.get("name"), e)
                return
            self.recorder.event(hpa, "Warning", "FailedUpdateStatus", str(e))
            raise
