"""The horizontal pod autoscaler controller, as kube-controller-manager runs it on a cluster
without a metrics server: it keeps each target's replicas within the HPA's bounds and says, in
the HPA's conditions and Events, that it cannot compute a replica count from metrics.

Each HPA is reconciled on change and every 15 s (``--horizontal-pod-autoscaler-sync-period``):

1. the target's ``scale`` subresource is read (``scaleTargetRef``); failing that: Event and
   condition ``AbleToScale`` False ``FailedGetScale``; else ``AbleToScale`` True
   ``SucceededGetScale``;
2. a target at 0 replicas (with ``minReplicas`` above 0) is left alone: ``ScalingActive`` False
   ``ScalingDisabled``; above ``maxReplicas`` it is scaled down to it, below ``minReplicas`` up
   to it ("Current number of replicas above Spec.MaxReplicas" / "below Spec.MinReplicas"),
   without metrics, as upstream: ``AbleToScale`` True ``SucceededRescale`` and a Normal
   ``SuccessfulRescale`` Event ``New size: N; reason: ...``; a failed write is ``FailedRescale``
   and ``AbleToScale`` False ``FailedUpdateScale``;
3. within the bounds, the metrics decide upstream; here every metric fails as upstream's do
   when the metrics APIs are unavailable: per metric a Warning Event (``FailedGetResourceMetric``,
   ``FailedGetContainerResourceMetric``, ``FailedGetPodsMetric``, ``FailedGetObjectMetric``,
   ``FailedGetExternalMetric``) and ``ScalingActive`` False with that reason and ``the HPA was
   unable to compute the replica count: ...``; then a ``FailedComputeMetricsReplicas`` Warning
   ``invalid metrics (N invalid out of M), first error is: ...``, ``status.currentMetrics`` one
   empty entry per metric (``type: ""``) and the replicas left as they are. A scale without a
   selector is ``SelectorRequired`` / ``InvalidSelector`` first.

The status (``currentReplicas``, ``desiredReplicas``, ``lastScaleTime`` on a rescale,
``currentMetrics``, ``conditions``) is written through ``horizontalpodautoscalers/status`` only
when it changed.

Mirrors: kubernetes pkg/controller/podautoscaler/horizontal.go (reconcileAutoscaler,
computeReplicasForMetrics, validateAndParseSelector, computeReplicasForMetric,
getUnableComputeReplicaCountCondition, setStatus, setConditionInList), replica_calculator.go and
metrics/client.go (the error texts).

Deviates: pumice's HPA controller reads no metrics, even though the API server serves
``metrics.k8s.io`` (the node agent's readings, for ``kubectl top``): the innermost cause in the
texts above says so (``... from resource metrics API: the HPA controller of pumice reads no
metrics``) where upstream names the missing API. The AmbiguousSelector check (one Pod selected by
two HPAs) and the scale-down stabilization of a metric recommendation do not apply without
metrics and are not implemented.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Protocol

from pumice._util.clock import Clock, rfc3339
from pumice.api import Obj, meta
from pumice.api.scheme import HORIZONTAL_POD_AUTOSCALER
from pumice.api.selectors import format_label_selector
from pumice.client.base import ApiError, is_conflict, is_not_found
from pumice.client.informer import Informer
from pumice.controllers.kube.options import KubeOptions
from pumice.runtime import Request, Result
from pumice.runtime.events import EventRecorder
from pumice.runtime.manager import Manager

__all__ = ["NO_METRICS", "SYNC_PERIOD", "HorizontalReconciler", "metric_failure"]

log = logging.getLogger(__name__)

#: seconds between two reconciles of one HPA (--horizontal-pod-autoscaler-sync-period)
SYNC_PERIOD = 15.0
#: the innermost cause of every metric failure (see Deviates in the module docstring)
NO_METRICS = "the HPA controller of pumice reads no metrics"
ABOVE_MAX = "Current number of replicas above Spec.MaxReplicas"
BELOW_MIN = "Current number of replicas below Spec.MinReplicas"


class RawClient(Protocol):
    """What the controller needs of its client besides the informers: raw REST calls (the
    ``scale`` subresource) and resolving the target's kind."""

    async def request(self, method: str, path: str, *, body: Any = None, content_type: str = "application/json",
                      params: Any = None) -> Any: ...

    async def resolve(self, api_version: str, kind: str) -> Any: ...

    async def update_status(self, obj: Obj) -> Obj: ...


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def metric_failure(metric: Obj, namespace: str) -> tuple[str, str, str]:
    """``(reason, error, wrapped)`` of one metric of an HPA when no metrics can be read:
    ``reason`` and ``error`` make the Warning Event and the ScalingActive condition
    (getUnableComputeReplicaCountCondition), ``wrapped`` is what computeReplicasForMetric returns
    (the first one goes into ``invalid metrics ..., first error is: <wrapped>``)."""
    mtype = str(metric.get("type") or "")
    key = {"Resource": "resource", "ContainerResource": "containerResource", "Pods": "pods", "Object": "object",
           "External": "external"}.get(mtype)
    src = _dict(metric.get(key)) if key else {}
    target = _dict(src.get("target"))
    name = str(src.get("name") or "")
    if key in ("resource", "containerResource"):
        cause = f"unable to get metrics for resource {name}: unable to fetch metrics from resource metrics API: {NO_METRICS}"
        error = (f"failed to get {name} usage: {cause}" if target.get("averageValue") is not None
                 else f"failed to get {name} utilization: {cause}")
        if key == "resource":
            return "FailedGetResourceMetric", error, f"failed to get {name} resource metric value: {error}"
        container = str(src.get("container") or "")
        return "FailedGetContainerResourceMetric", error, f"failed to get {container} container metric value: {error}"
    metric_name = str(_dict(src.get("metric")).get("name") or "")
    if key == "pods":
        error = f"unable to get metric {metric_name}: unable to fetch metrics from custom metrics API: {NO_METRICS}"
        return "FailedGetPodsMetric", error, f"failed to get pods metric value: {error}"
    if key == "object":
        ref = _dict(src.get("describedObject"))
        error = (f"unable to get metric {metric_name}: unable to fetch metrics from custom metrics API: {NO_METRICS} "
                 f"on {ref.get('kind', '')} {namespace}/{ref.get('name', '')}")
        if target.get("type") != "Value" or target.get("value") is None:
            error = f"failed to get {metric_name} object metric: {error}"
        return "FailedGetObjectMetric", error, f"failed to get object metric value: {error}"
    if key == "external":
        selector = format_label_selector((src.get("metric") or {}).get("selector"))
        error = (f"unable to get external metric {namespace}/{metric_name}/{selector}: unable to fetch metrics from "
                 f"external metrics API: {NO_METRICS}")
        error = (f"failed to get external metric {metric_name}: {error}" if target.get("averageValue") is not None
                 else f"failed to get {metric_name} external metric: {error}")
        return "FailedGetExternalMetric", error, f"failed to get {metric_name} external metric value: {error}"
    error = f'unknown metric source type "{mtype}"'
    return "InvalidMetricSourceType", error, error


def _spec_changed(old: Obj, new: Obj) -> bool:
    """Updates reconcile at once only when the spec changed; the controller's own status writes
    wait for the next sync (upstream queues every update behind the sync period)."""
    return old.get("spec") != new.get("spec")


class HorizontalReconciler:
    """Reconciles HorizontalPodAutoscalers (see the module docstring)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> HorizontalReconciler:
        """Build the controller and register it (HPAs, autoscaling/v2)."""
        hpa = cls(mgr.client, hpas=mgr.informers.informer(HORIZONTAL_POD_AUTOSCALER), clock=mgr.clock,
                  recorder=mgr.event_recorder("horizontal-pod-autoscaler"))
        mgr.controller("horizontalpodautoscaling").for_(HORIZONTAL_POD_AUTOSCALER, _spec_changed).complete(hpa)
        return hpa

    def __init__(self, client: Any, *, hpas: Informer, clock: Clock, recorder: EventRecorder,
                 sync_period: float = SYNC_PERIOD) -> None:
        self.client: RawClient = client
        self.hpas = hpas
        self.clock = clock
        self.recorder = recorder
        self.sync_period = sync_period

    def _condition(self, status: Obj, ctype: str, value: str, reason: str, message: str) -> None:
        """setConditionInList: the condition's status, reason and message; its
        lastTransitionTime only when the status flips (a new condition goes last)."""
        meta.set_condition(status, {"type": ctype, "status": value, "reason": reason, "message": message},
                           rfc3339(self.clock.now()))

    async def reconcile(self, req: Request) -> Result:
        stored = self.hpas.store.get(req.namespace, req.name)
        if stored is None or stored["metadata"].get("deletionTimestamp"):
            return Result()
        hpa = copy.deepcopy(stored)
        original = copy.deepcopy(stored.get("status") or {})
        status: Obj = copy.deepcopy(original)
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        scale = await self._get_scale(hpa, status, ref)
        if scale is None:
            await self._write_status(hpa, original, status)
            return Result(requeue_after=self.sync_period)
        self._condition(status, "AbleToScale", "True", "SucceededGetScale",
                        "the HPA controller was able to get the target's current scale")
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        lo = spec.get("minReplicas")
        lo = 1 if lo is None else int(lo)
        hi = int(spec.get("maxReplicas") or 0)
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
            metric_statuses = self._metrics_fail(hpa, status, scale)
            self._set_status(status, current, int(status.get("desiredReplicas") or 0), metric_statuses, False)
            await self._write_status(hpa, original, status)
            return Result(requeue_after=self.sync_period)
        if rescale:
            if not await self._rescale(hpa, status, scale, ref, desired, reason):
                self._set_status(status, current, int(status.get("desiredReplicas") or 0), None, False)
                await self._write_status(hpa, original, status)
                return Result(requeue_after=self.sync_period)
        else:
            desired = current
        self._set_status(status, current, desired, metric_statuses, rescale)
        await self._write_status(hpa, original, status)
        return Result(requeue_after=self.sync_period)

    async def _get_scale(self, hpa: Obj, status: Obj, ref: Obj) -> Obj | None:
        """The target's Scale, or None after the FailedGetScale Event and condition."""
        ns = hpa["metadata"].get("namespace") or ""
        try:
            rk = await self.client.resolve(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
            scale: Obj = await self.client.request("GET", rk.path(ns, str(ref.get("name") or ""), "scale"))
        except ApiError as e:
            self.recorder.event(hpa, "Warning", "FailedGetScale", str(e))
            self._condition(status, "AbleToScale", "False", "FailedGetScale",
                            f"the HPA controller was unable to get the target's current scale: {e}")
            return None
        return scale

    def _metrics_fail(self, hpa: Obj, status: Obj, scale: Obj) -> list[Obj] | None:
        """computeReplicasForMetrics when no metric can be read: the selector check, then each
        metric's failure; the FailedComputeMetricsReplicas Event. Returns the metric statuses
        (one empty entry per metric; None when the selector failed)."""
        selector = str((scale.get("status") or {}).get("selector") or "")
        if not selector:
            self.recorder.event(hpa, "Warning", "SelectorRequired", "selector is required")
            self._condition(status, "ScalingActive", "False", "InvalidSelector",
                            "the HPA target's scale is missing a selector")
            self.recorder.event(hpa, "Warning", "FailedComputeMetricsReplicas", "selector is required")
            return None
        metrics = [m for m in (hpa.get("spec") or {}).get("metrics") or [] if isinstance(m, dict)]
        ns = hpa["metadata"].get("namespace") or ""
        first: tuple[str, str, str] | None = None
        for metric in metrics:
            reason, error, wrapped = metric_failure(metric, ns)
            self.recorder.event(hpa, "Warning", reason, error)
            if first is None:
                first = (reason, error, wrapped)
        if first is not None:
            reason, error, wrapped = first
            self._condition(status, "ScalingActive", "False", reason,
                            f"the HPA was unable to compute the replica count: {error}")
            self.recorder.event(hpa, "Warning", "FailedComputeMetricsReplicas",
                                f"invalid metrics ({len(metrics)} invalid out of {len(metrics)}), first error is: "
                                f"{wrapped}")
        return [{"type": ""} for _ in metrics]

    async def _rescale(self, hpa: Obj, status: Obj, scale: Obj, ref: Obj, desired: int, reason: str) -> bool:
        """Write ``desired`` replicas to the target's scale: True with SucceededRescale and the
        SuccessfulRescale Event, False with FailedRescale / FailedUpdateScale."""
        ns = hpa["metadata"].get("namespace") or ""
        body = copy.deepcopy(scale)
        body.setdefault("spec", {})["replicas"] = desired
        try:
            rk = await self.client.resolve(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
            await self.client.request("PUT", rk.path(ns, str(ref.get("name") or ""), "scale"), body=body)
        except ApiError as e:
            self.recorder.event(hpa, "Warning", "FailedRescale", f"New size: {desired}; reason: {reason}; error: {e}")
            self._condition(status, "AbleToScale", "False", "FailedUpdateScale",
                            f"the HPA controller was unable to update the target scale: {e}")
            return False
        self._condition(status, "AbleToScale", "True", "SucceededRescale",
                        f"the HPA controller was able to update the target scale to {desired}")
        self.recorder.event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
        log.info("HPA %s/%s rescaled %s/%s to %d: %s", ns, hpa["metadata"]["name"], ref.get("kind"), ref.get("name"),
                 desired, reason)
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
