"""The pod garbage collector: force-deletes Pods no kubelet will ever finish.

One pass (:meth:`PodGCController.gc_once`) over the Pod and Node caches does, in upstream's order:

1. **terminated**: when more than ``terminated_pod_threshold`` Pods are terminated (phase neither
   Pending, Running nor Unknown), the oldest of them beyond the threshold go, kubelet-evicted ones
   (phase Failed, reason ``Evicted``) first, then by creationTimestamp, then by name (a threshold
   of 0 or less turns this off; kube-controller-manager's ``--terminated-pod-gc-threshold``,
   default 12500);
2. **terminating on out-of-service Nodes**: a Pod with a deletionTimestamp on a Node that is not
   Ready and carries the ``node.kubernetes.io/out-of-service`` taint;
3. **orphaned**: a Pod whose ``spec.nodeName`` names a Node absent from the cache is quarantined
   with that Node name for ``quarantine`` seconds (40); a pass after the quarantine asks the API
   for the Node (GET, so a cache that lags does not count), and when it answers 404 every Pod on
   that Node goes, with the condition ``DisruptionTarget=True`` reason ``DeletionByPodGC``
   message ``PodGC: node no longer exists``;
4. **unscheduled terminating**: a Pod with a deletionTimestamp and no ``spec.nodeName``.

Each collected Pod is first patched (status subresource, strategic merge, with its uid so a
re-created Pod of the same name is not touched) to phase ``Failed`` (plus the condition for
orphans) unless it already Succeeded or Failed, then deleted with grace period 0. A failed
patch or delete is logged with the Pod and the error and retried by the next pass; a Pod already
gone (404) is not logged.

Metrics (prometheus_client default registry, served on the controller manager's ``/metrics``),
each labelled ``namespace`` and ``reason`` (``terminated``, ``out-of-service``, ``orphaned``,
``unscheduled``: the step that chose the Pod): ``pod_gc_collector_force_delete_pods_total``
counts every forced deletion tried, ``pod_gc_collector_force_delete_pod_errors_total`` the ones
whose patch or delete failed (a 404 included, as upstream counts it). The help texts carry
component-base's ``[ALPHA]`` stability prefix, as kube-controller-manager exposes them.

When passes run: at start, every ``gc_check_period`` seconds (upstream's gcCheckPeriod, 20 s),
when a Node is deleted or gets the out-of-service taint (its name is quarantined at once), and
when a quarantine ends. With ``gc_check_period=None`` (``pumice simulate``, where Pods only
reach a Node through a scheduler and Nodes are never deleted unless the user does it) only the
event-driven passes run: no timer, and no per-Pod-event work at all, so a run with nothing to
collect costs nothing.

Mirrors: kubernetes pkg/controller/podgc/gc_controller.go (gc, gcTerminated, gcTerminating,
gcOrphaned, discoverDeletedNodes, gcUnscheduledTerminating, byEvictionAndCreationTimestamp,
markFailedAndDeletePodWithCondition), pkg/controller/podgc/metrics/metrics.go;
cmd/kube-controller-manager options
(``--terminated-pod-gc-threshold``). Deviates: upstream logs "Failed to get node" for every
terminating Pod whose Node is not cached; here such a Pod is left to the orphan and unscheduled
steps without a log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from prometheus_client import Counter

from pumice._util.clock import Clock, rfc3339
from pumice.api import Obj, meta
from pumice.api.scheme import NODE, POD
from pumice.client.base import ApiError, KubeClient, get_or_none, is_not_found
from pumice.client.informer import Informer
from pumice.controllers.kube import podutil
from pumice.runtime.manager import Manager

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions


log = logging.getLogger(__name__)

GC_CHECK_PERIOD = 20.0
"""Seconds between passes (upstream gcCheckPeriod)."""
QUARANTINE_TIME = 40.0
"""Seconds a missing Node's name waits before the API is asked whether it is gone (quarantineTime)."""
TERMINATED_POD_GC_THRESHOLD = 12500
"""kube-controller-manager's ``--terminated-pod-gc-threshold`` default."""
TAINT_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
ORPHAN_CONDITION: Obj = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                         "message": "PodGC: node no longer exists"}

DELETING_PODS_TOTAL = Counter(
    "force_delete_pods_total",
    "[ALPHA] Number of pods that are being forcefully deleted since the Pod GC Controller started.",
    ["namespace", "reason"], subsystem="pod_gc_collector")
"""``pod_gc_collector_force_delete_pods_total{namespace,reason}`` (upstream DeletingPodsTotal)."""
DELETING_PODS_ERROR_TOTAL = Counter(
    "force_delete_pod_errors_total",
    "[ALPHA] Number of errors encountered when forcefully deleting the pods since the Pod GC Controller started.",
    ["namespace", "reason"], subsystem="pod_gc_collector")
"""``pod_gc_collector_force_delete_pod_errors_total{namespace,reason}`` (upstream DeletingPodsErrorTotal)."""
REASON_TERMINATED = "terminated"
REASON_TERMINATING_OUT_OF_SERVICE = "out-of-service"
REASON_ORPHANED = "orphaned"
REASON_TERMINATING_UNSCHEDULED = "unscheduled"


def is_pod_terminated(pod: Obj) -> bool:
    """Upstream isPodTerminated: the phase is none of Pending, Running, Unknown."""
    return (pod.get("status") or {}).get("phase") not in ("Pending", "Running", "Unknown")


def _evicted(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"


def eviction_and_creation_order(pods: list[Obj]) -> list[Obj]:
    """``pods`` sorted as byEvictionAndCreationTimestamp: kubelet-evicted first, then oldest
    creationTimestamp, then name."""
    def key(p: Obj) -> tuple[bool, str, str]:
        md = p.get("metadata") or {}
        return (not _evicted(p), str(md.get("creationTimestamp") or ""), str(md.get("name") or ""))
    return sorted(pods, key=key)


def _node_ready(node: Obj) -> bool:
    return meta.is_condition_true(node, "Ready")


def _out_of_service(node: Obj) -> bool:
    return any(t.get("key") == TAINT_OUT_OF_SERVICE for t in (node.get("spec") or {}).get("taints") or ())


class PodGCController:
    """Deletes terminated Pods over the threshold, orphaned Pods and stuck terminating Pods (see
    the module docstring)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> PodGCController:
        """Build the controller and add it to ``mgr`` as a runnable named ``podgc``."""
        gc = cls(mgr.client, pods=mgr.informers.informer(POD), nodes=mgr.informers.informer(NODE), clock=mgr.clock,
                 terminated_pod_threshold=opts.terminated_pod_gc_threshold, gc_check_period=opts.pod_gc_check_period)
        mgr.add_runnable(gc.run, name="podgc")
        return gc

    def __init__(self, client: KubeClient, *, pods: Informer, nodes: Informer, clock: Clock,
                 terminated_pod_threshold: int = TERMINATED_POD_GC_THRESHOLD,
                 gc_check_period: float | None = GC_CHECK_PERIOD, quarantine: float = QUARANTINE_TIME) -> None:
        """
        Args:
            terminated_pod_threshold: terminated Pods kept; <= 0 keeps them all.
            gc_check_period: seconds between passes; None: only event-driven passes.
            quarantine: seconds before a missing Node is looked up in the API.
        """
        self.client = client
        self.pods = pods
        self.nodes = nodes
        self.clock = clock
        self.terminated_pod_threshold = terminated_pod_threshold
        self.gc_check_period = gc_check_period
        self.quarantine = quarantine
        self._quarantined: dict[str, float] = {}
        """Node name -> monotonic time its quarantine ends (the delaying queue of upstream)."""
        self._wake = asyncio.Event()
        nodes.add_event_handler(None, self._node_updated, self._node_deleted)

    # -- events (cheap: Nodes only) -------------------------------------------------------------

    def _quarantine(self, node_name: str) -> None:
        """Add ``node_name`` to the quarantine; an earlier end already set is kept (AddAfter)."""
        self._quarantined.setdefault(node_name, self.clock.monotonic() + self.quarantine)

    def _node_deleted(self, node: Obj) -> None:
        self._quarantine(meta.name(node))
        self._wake.set()

    def _node_updated(self, old: Obj, new: Obj) -> None:
        if _out_of_service(new) and not _out_of_service(old):
            self._wake.set()

    # -- one pass ---------------------------------------------------------------------------------

    async def gc_once(self) -> None:
        """One pass over the caches (upstream gc): terminated, terminating on out-of-service
        Nodes, orphaned, unscheduled terminating."""
        pods = self.pods.store.list()
        if self.terminated_pod_threshold > 0:
            await self.gc_terminated(pods)
        await self.gc_terminating(pods)
        await self.gc_orphaned(pods)
        await self.gc_unscheduled_terminating(pods)

    async def gc_terminated(self, pods: list[Obj]) -> None:
        """Delete the oldest terminated Pods beyond the threshold."""
        terminated = [p for p in pods if is_pod_terminated(p)]
        excess = len(terminated) - self.terminated_pod_threshold
        if excess <= 0:
            return
        log.info("pod gc: garbage collecting %d terminated pods", excess)
        for pod in eviction_and_creation_order(terminated)[:excess]:
            await self._mark_failed_and_delete(pod, REASON_TERMINATED)

    async def gc_terminating(self, pods: list[Obj]) -> None:
        """Delete terminating Pods on Nodes that are not Ready and tainted out-of-service."""
        doomed = []
        for pod in pods:
            if not (pod.get("metadata") or {}).get("deletionTimestamp"):
                continue
            node_name = (pod.get("spec") or {}).get("nodeName")
            node = self.nodes.store.get(None, node_name) if node_name else None
            if node is not None and not _node_ready(node) and _out_of_service(node):
                doomed.append(pod)
        for pod in eviction_and_creation_order(doomed):
            await self._mark_failed_and_delete(pod, REASON_TERMINATING_OUT_OF_SERVICE)

    async def gc_orphaned(self, pods: list[Obj]) -> None:
        """Quarantine the names of missing Nodes that Pods are bound to; delete the Pods of those
        the API confirms gone once their quarantine ended."""
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name and self.nodes.store.get(None, node_name) is None:
                self._quarantine(node_name)
        deleted = await self._discover_deleted_nodes()
        if not deleted:
            return
        for pod in pods:
            if (pod.get("spec") or {}).get("nodeName") not in deleted:
                continue
            if await self._mark_failed_and_delete(pod, REASON_ORPHANED, ORPHAN_CONDITION):
                log.info("pod gc: forced deletion of orphaned Pod %s/%s (node %s) succeeded", meta.namespace(pod),
                         meta.name(pod), pod["spec"]["nodeName"])

    async def _discover_deleted_nodes(self) -> set[str]:
        now = self.clock.monotonic()
        deleted: set[str] = set()
        for name, ready in sorted(self._quarantined.items()):
            if ready > now:
                continue
            del self._quarantined[name]
            if self.nodes.store.get(None, name) is not None:
                continue
            try:
                if await get_or_none(self.client, NODE, name) is None:
                    deleted.add(name)
            except ApiError as e:
                log.error("pod gc: error while getting node %s: %s", name, e)
                self._quarantine(name)  # looked up again after another quarantine
        return deleted

    async def gc_unscheduled_terminating(self, pods: list[Obj]) -> None:
        """Delete terminating Pods that were never bound to a Node."""
        for pod in pods:
            if not (pod.get("metadata") or {}).get("deletionTimestamp") or (pod.get("spec") or {}).get("nodeName"):
                continue
            if await self._mark_failed_and_delete(pod, REASON_TERMINATING_UNSCHEDULED):
                log.info("pod gc: forced deletion of unscheduled terminating Pod %s/%s succeeded", meta.namespace(pod),
                         meta.name(pod))

    async def _mark_failed_and_delete(self, pod: Obj, reason: str, condition: Obj | None = None) -> bool:
        """Phase Failed (plus ``condition``) unless already terminal, then delete with grace 0,
        counted under ``reason`` (one of the ``REASON_`` labels). Returns whether both
        succeeded; a failure is counted and logged (the next pass retries)."""
        md = pod["metadata"]
        ns, name = md.get("namespace"), md["name"]
        log.info("pod gc: force deleting Pod %s/%s", ns, name)
        DELETING_PODS_TOTAL.labels(ns or "", reason).inc()
        try:
            status = pod.get("status") or {}
            if not podutil.is_terminal(pod):
                patch: Obj = {"phase": "Failed"}
                if condition is not None:
                    conds = meta.with_condition(status.get("conditions"), {**condition, "lastProbeTime": None},
                                                rfc3339(self.clock.now()))
                    patch["conditions"] = [meta.find_condition(conds, condition["type"])]
                await self.client.patch(POD, name, {"metadata": {"uid": md.get("uid")}, "status": patch}, ns,
                                        patch_type="strategic", subresource="status")
            await self.client.delete(POD, name, ns, grace_period_seconds=0)
        except ApiError as e:
            DELETING_PODS_ERROR_TOTAL.labels(ns or "", reason).inc()
            if not is_not_found(e):
                log.error("pod gc: could not delete Pod %s/%s: %s", ns, name, e)
            return False
        return True

    # -- loop -------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Pass at start, then every ``gc_check_period`` seconds, on Node events and when a
        quarantine ends, until cancelled."""
        await self.pods.wait_synced()
        await self.nodes.wait_synced()
        while True:
            self._wake.clear()
            await self.gc_once()
            timeout = self.gc_check_period
            if self._quarantined:
                due = max(0.0, min(self._quarantined.values()) - self.clock.monotonic())
                timeout = due if timeout is None else min(timeout, due)
            await self._wait(timeout)

    async def _wait(self, timeout: float | None) -> None:
        """Until :attr:`_wake` is set or ``timeout`` seconds passed on the clock (None: no limit)."""
        if timeout is None:
            await self._wake.wait()
            return
        waiters = {asyncio.ensure_future(self._wake.wait()), asyncio.ensure_future(self.clock.sleep(timeout))}
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await w
