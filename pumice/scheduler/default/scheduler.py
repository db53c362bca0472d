"""The default scheduler process: watch Pods and Nodes, schedule one Pod at a time, bind.

Responsibility: Pods whose ``spec.schedulerName`` is ``scheduler_name`` (``"default-scheduler"``
also takes Pods with an empty schedulerName); Pods of any other schedulerName are never touched.
Assigned Pods of every scheduler count against their Node; Succeeded/Failed Pods do not.
Scores include PodTopologySpread with Kubernetes' system-default constraints, for which the
scheduler also watches Services, ReplicationControllers, ReplicaSets and StatefulSets; a Pod's
``DoNotSchedule`` constraints filter Nodes (:mod:`pumice.scheduler.default.spread`), and an
assigned Pod the scheduler did not place itself moves the parked Pods back to the queue, since it
changes the spread counts. VolumeBinding (:mod:`pumice.scheduler.default.volumebinding`) reads
PersistentVolumeClaims, PersistentVolumes and StorageClasses from their informers: a Pod with
claim volumes is refused before the filters when a claim is missing or unbound (the FailedScheduling
message carries the PreFilter's text), and any change to those objects moves the parked Pods back.

The cycle: pop the next Pod from the :class:`SchedulingQueue`, run the vectorized core, then
either *assume* the Pod on the chosen Node (it counts there at once, so the next cycle never
double-books the Node) and bind it through ``pods/binding`` on a background task, or write
``PodScheduled=False`` (reason ``Unschedulable``, the FitError message) and a ``FailedScheduling``
Event and park the Pod until a cluster change or its backoff expires. A failed bind forgets the
assumption and sends the Pod back to the queue. A Pod with ``spec.schedulingGates`` gets
``PodScheduled=False`` (reason ``SchedulingGated``) and is queued once its gates are removed.

Mirrors: kubernetes pkg/scheduler/schedule_one.go (scheduleOne, assume, bindingCycle,
handleSchedulingFailure), pkg/scheduler/eventhandlers.go (which informer events move Pods).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
from typing import Any

from prometheus_client import Counter

from pumice._util.clock import Clock, default_clock, rfc3339
from pumice._util.errors import FATAL_TYPES, is_bug, watch_task
from pumice.api import Obj
from pumice.api.meta import with_condition
from pumice.api.scheme import (
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    REPLICA_SET,
    REPLICATION_CONTROLLER,
    SERVICE,
    STATEFUL_SET,
    STORAGE_CLASS,
)
from pumice.api.selectors import SelectorError
from pumice.client.base import ApiError, KubeClient, is_not_found, patch_status_conditions
from pumice.client.informer import SharedInformerFactory
from pumice.runtime.events import EventRecorder
from pumice.scheduler.default import plugins
from pumice.scheduler.default.bindvolumes import bind_pod_volumes
from pumice.scheduler.default.core import CoreBase
from pumice.scheduler.default.podinfo import PodInfo, PodSpecError, effective_taints
from pumice.scheduler.default.queue import SchedulingQueue
from pumice.scheduler.default.resources import node_allocatable
from pumice.scheduler.default.spread import (
    Spread,
    SpreadConstraint,
    controller_ref,
    default_selector,
    hard_constraints,
    selects_by_controller,
    soft_constraints,
)
from pumice.scheduler.default.vector import VectorCore
from pumice.scheduler.default.volumebinding import (
    InformerListers,
    VolumeBindingError,
    filter_reasons,
    has_claim_volumes,
    pre_filter,
)

log = logging.getLogger(__name__)

SCHEDULE_ATTEMPTS = Counter(
    "scheduler_schedule_attempts", "Number of attempts to schedule pods, by the result.", ["profile", "result"])

DEFAULT_SCHEDULER_NAME = "default-scheduler"

REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULING_GATED = "SchedulingGated"
MSG_SCHEDULING_GATED = "Scheduling is blocked due to non-empty scheduling gates"
BATCH = 32
REASON_SCHEDULER_ERROR = "SchedulerError"


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _uid(pod: Obj) -> str:
    md = pod.get("metadata") or {}
    return str(md.get("uid") or f"{md.get('namespace', '')}/{md.get('name', '')}")


def _node_signature(node: Obj) -> tuple[Any, ...]:
    """What the scheduler reads from a Node; a heartbeat-only update leaves it unchanged."""
    md = node.get("metadata") or {}
    return (
        tuple(sorted((md.get("labels") or {}).items())),
        effective_taints(node),
        bool((node.get("spec") or {}).get("unschedulable")),
        tuple(sorted(node_allocatable(node).items())),
    )


class DefaultScheduler:
    """kube-scheduler subset, usable in-process.

    Args:
        client: API client.
        clock: time source (backoff, condition timestamps).
        scheduler_name: the ``spec.schedulerName`` served.
        informers: a shared informer factory to reuse (one is created otherwise).
        seed: seed of the tie-break random generator.
        core: the scheduling core (default :class:`VectorCore`).
        max_binds_in_flight: concurrent ``pods/binding`` calls.

    Metrics: ``scheduler_schedule_attempts_total{profile,result}`` (result ``scheduled``,
    ``unschedulable`` or ``error``), as kube-scheduler's.
    """

    def __init__(
        self, client: KubeClient, *, clock: Clock | None = None, scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        informers: SharedInformerFactory | None = None, seed: int = 0, core: CoreBase | None = None,
        max_binds_in_flight: int = 64, record_scheduled_events: bool = True,
    ) -> None:
        self.client = client
        self.clock = clock or default_clock()
        self.scheduler_name = scheduler_name
        self.informers = informers or SharedInformerFactory(client, clock=self.clock)
        self._own_informers = informers is None
        self.core = core or VectorCore(seed=seed)
        self.queue = SchedulingQueue()
        self.recorder = EventRecorder(client, scheduler_name, clock=self.clock)
        self.record_scheduled_events = record_scheduled_events
        self._bind_slots = asyncio.Semaphore(max_binds_in_flight)
        self._assumed: dict[str, str] = {}
        self._node_sigs: dict[str, tuple[Any, ...]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()  # the loops and the one-shot tasks (_spawn)
        self._loops: list[asyncio.Task[Any]] = []  # the scheduling and flush loops (start)
        self._stopped = asyncio.Event()
        self._failure: BaseException | None = None
        if self._own_informers:
            self.informers.on_failure = self._informer_failed
        self._pods = self.informers.informer(POD)
        self._nodes = self.informers.informer(NODE)
        # what PodTopologySpread's system-default constraints select by (helper.DefaultSelector)
        self._services = self.informers.informer(SERVICE)
        self._controllers = {("v1", "ReplicationController"): self.informers.informer(REPLICATION_CONTROLLER),
                             ("apps/v1", "ReplicaSet"): self.informers.informer(REPLICA_SET),
                             ("apps/v1", "StatefulSet"): self.informers.informer(STATEFUL_SET)}
        # VolumeBinding reads claims, volumes and classes; a change to any may let a parked Pod in
        self._volume_informers = [self.informers.informer(k) for k in
                                  (PERSISTENT_VOLUME_CLAIM, PERSISTENT_VOLUME, STORAGE_CLASS)]
        self.volumes = InformerListers(*self._volume_informers)
        for inf in self._volume_informers:
            inf.add_event_handler(self._on_volume_change, lambda _old, new: self._on_volume_change(new))
        self._nodes.add_event_handler(self._on_node_add, self._on_node_update, self._on_node_delete)
        self._pods.add_event_handler(self._on_pod_add, self._on_pod_update, self._on_pod_delete)

    # -- responsibility ------------------------------------------------------------------------
    def responsible_for(self, pod: Obj) -> bool:
        name = (pod.get("spec") or {}).get("schedulerName") or ""
        return name == self.scheduler_name or (not name and self.scheduler_name == DEFAULT_SCHEDULER_NAME)

    def _now(self) -> float:
        return self.clock.monotonic()

    # -- Node events -------------------------------------------------------------------------
    def _on_node_add(self, node: Obj) -> None:
        name = str(node["metadata"]["name"])
        self._node_sigs[name] = _node_signature(node)
        self.core.set_node(node)
        self.queue.move_all_to_active_or_backoff(self._now())

    def _on_node_update(self, old: Obj, node: Obj) -> None:
        name = str(node["metadata"]["name"])
        sig = _node_signature(node)
        if self._node_sigs.get(name) == sig and self.core.has_node(name):
            return
        self._node_sigs[name] = sig
        self.core.set_node(node)
        self.queue.move_all_to_active_or_backoff(self._now())

    def _on_node_delete(self, node: Obj) -> None:
        name = str(node["metadata"]["name"])
        self._node_sigs.pop(name, None)
        self.core.remove_node(name)

    def _on_volume_change(self, _obj: Obj) -> None:
        """A claim, volume or StorageClass was added or changed (VolumeBinding's cluster events)."""
        self.queue.move_all_to_active_or_backoff(self._now())

    # -- Pod events --------------------------------------------------------------------------
    def _track_assigned(self, pod: Obj) -> None:
        uid = _uid(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if _terminal(pod):
            self._forget(uid)
            return
        self._assumed.pop(uid, None)
        known = self.core.pod_node(uid)
        if known == node and not self._spread_facts_changed(uid, pod):
            return
        try:
            self.core.add_pod(PodInfo.from_pod(pod), str(node))
        except PodSpecError:
            log.warning("assigned pod %s has unreadable requests; not counted", uid)
            return
        # A Pod placed by someone else, moved, or relabelled changes the topology spread counts
        # a DoNotSchedule constraint of a parked Pod may be waiting for (PodTopologySpread's
        # Pod Add/Update events); the Pods this scheduler assumed are counted already.
        self.queue.move_all_to_active_or_backoff(self._now())

    def _spread_facts_changed(self, uid: str, pod: Obj) -> bool:
        """The labels or the terminating mark of a counted Pod changed (PodTopologySpread counts
        Pods by them)."""
        known = self.core.pod_info(uid)
        md = pod.get("metadata") or {}
        return known is not None and (dict(md.get("labels") or {}) != known.labels
                                      or bool(md.get("deletionTimestamp")) != known.terminating)

    def _spread_of(self, pod: Obj) -> Spread | None:
        """The Pod's soft topology spread constraints: its own ScheduleAnyway ones, else the
        system defaults selected by the Services and the RC/RS/StatefulSet that select it.

        Raises:
            PodSpecError: a constraint's labelSelector does not parse.
        """
        default = None
        if not (pod.get("spec") or {}).get("topologySpreadConstraints"):
            ns = str((pod.get("metadata") or {}).get("namespace") or "")
            ref = controller_ref(pod)
            controller = None
            if ref is not None and selects_by_controller(ref):
                inf = self._controllers[(str(ref.get("apiVersion")), str(ref.get("kind")))]
                controller = inf.store.get(ns, str(ref.get("name") or ""))
            default = default_selector(pod, self._services.store.list(ns), controller)
        try:
            return soft_constraints(pod, default)
        except SelectorError as e:
            raise PodSpecError(f"bad topologySpreadConstraints labelSelector: {e}") from e

    @staticmethod
    def _spread_filter_of(pod: Obj) -> tuple[SpreadConstraint, ...]:
        """The Pod's DoNotSchedule topology spread constraints.

        Raises:
            PodSpecError: a constraint's labelSelector does not parse.
        """
        try:
            return hard_constraints(pod)
        except SelectorError as e:
            raise PodSpecError(f"bad topologySpreadConstraints labelSelector: {e}") from e

    def _forget(self, uid: str) -> bool:
        self._assumed.pop(uid, None)
        if self.core.pod_node(uid) is None:
            return False
        self.core.remove_pod(uid)
        return True

    def _on_pod_add(self, pod: Obj) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            self._track_assigned(pod)
        elif self.responsible_for(pod) and not _terminal(pod) and not pod["metadata"].get("deletionTimestamp"):
            if (pod.get("spec") or {}).get("schedulingGates"):
                self._spawn(self._write_pod_scheduled(pod, REASON_SCHEDULING_GATED, MSG_SCHEDULING_GATED))
                return
            md = pod["metadata"]
            self.queue.add(_uid(pod), md.get("namespace", ""), md["name"],
                           int((pod.get("spec") or {}).get("priority") or 0), self._now())

    def _on_pod_update(self, old: Obj, pod: Obj) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            self.queue.delete(_uid(pod))
            freed = _terminal(pod) and self.core.pod_node(_uid(pod)) is not None
            self._track_assigned(pod)
            if freed:
                self.queue.move_all_to_active_or_backoff(self._now())
            return
        if (old.get("spec") or {}) != (pod.get("spec") or {}) or (
                (old.get("metadata") or {}).get("labels") != (pod.get("metadata") or {}).get("labels")):
            self._on_pod_add(pod)

    def _on_pod_delete(self, pod: Obj) -> None:
        uid = _uid(pod)
        self.queue.delete(uid)
        if self._forget(uid):
            self.queue.move_all_to_active_or_backoff(self._now())

    # -- the cycle ---------------------------------------------------------------------------
    async def schedule_one(self) -> None:
        """Pop one Pod and run a scheduling cycle for it."""
        qp = await self.queue.pop()
        pod = self._pods.store.get(qp.namespace, qp.name)
        if (pod is None or _uid(pod) != qp.uid or (pod.get("spec") or {}).get("nodeName")
                or pod["metadata"].get("deletionTimestamp")):
            self.queue.delete(qp.uid)
            self.queue.done(qp.uid)
            return
        try:
            volume_reasons = self._volume_binding(pod) if has_claim_volumes(pod) else None
        except VolumeBindingError as e:
            SCHEDULE_ATTEMPTS.labels(self.scheduler_name, "error").inc()
            self.queue.failed(qp.uid, self._now())
            await self._record_failure(pod, REASON_SCHEDULER_ERROR, str(e))
            return
        if isinstance(volume_reasons, str):
            SCHEDULE_ATTEMPTS.labels(self.scheduler_name, "unschedulable").inc()
            self.queue.failed(qp.uid, self._now())
            await self._record_failure(pod, REASON_UNSCHEDULABLE,
                                       plugins.prefilter_error_message(len(self.core.node_names), volume_reasons))
            return
        try:
            info = dataclasses.replace(PodInfo.from_pod(pod), spread=self._spread_of(pod),
                                       spread_filter=self._spread_filter_of(pod), volume_reasons=volume_reasons)
        except PodSpecError as e:
            SCHEDULE_ATTEMPTS.labels(self.scheduler_name, "error").inc()
            self.queue.failed(qp.uid, self._now())
            await self._record_failure(pod, REASON_SCHEDULER_ERROR, str(e))
            return
        decision = self.core.schedule(info)
        if decision.node is None:
            SCHEDULE_ATTEMPTS.labels(self.scheduler_name, "unschedulable").inc()
            self.queue.failed(qp.uid, self._now())
            await self._record_failure(pod, REASON_UNSCHEDULABLE, decision.message)
            return
        self.core.add_pod(info, decision.node)
        self._assumed[info.uid] = decision.node
        self.queue.done(qp.uid)
        # a Pod with claims to bind first takes its slot after PreBind (see _bind)
        slot_held = info.volume_reasons is None
        if slot_held:
            await self._bind_slots.acquire()
        self._spawn(self._bind(pod, info, decision.node, slot_held=slot_held))

    def _spawn(self, coro: Any) -> None:
        """Run a one-shot task (a binding cycle, a PodScheduled write); :meth:`stop` cancels it.
        See :meth:`_one_shot_failed` for how its end counts."""
        task = asyncio.create_task(coro, name=f"scheduler {coro.__name__}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        watch_task(task, owner="scheduler", logger=log, on_fatal=self._one_shot_failed)

    def _one_shot_failed(self, e: BaseException) -> None:
        """A one-shot task's FATAL_TYPES error stops the scheduler (:meth:`run` raises it); any
        other error is logged with the task's name and the scheduler goes on
        (:func:`pumice._util.errors.watch_task`; a bind's own errors never get there:
        :meth:`_bind` undoes the binding cycle for any of them, as upstream's
        handleBindingCycleError)."""
        if self._failure is None:
            self._failure = e
        self._stopped.set()

    def _volume_binding(self, pod: Obj) -> dict[str, tuple[str, ...]] | str:
        """VolumeBinding for a Pod with claim volumes: the PreFilter's rejection message, or the
        Filter's reasons for each Node it refuses (Nodes absent from the result pass).

        Raises:
            VolumeBindingError: the Filter's error (a waiting claim without a usable class).
        """
        claims = pre_filter(pod, self.volumes)
        if isinstance(claims, str):
            return claims
        refused: dict[str, tuple[str, ...]] = {}
        if not claims.bound and not claims.delayed:
            return refused
        for node in self._nodes.store.list():
            name = str(node["metadata"]["name"])
            if not self.core.has_node(name):
                continue
            why = filter_reasons(claims, name, (node.get("metadata") or {}).get("labels") or {}, self.volumes)
            if why:
                refused[name] = tuple(why)
        return refused

    async def _bind(self, pod: Obj, info: PodInfo, node: str, *, slot_held: bool) -> None:
        """The binding cycle of one Pod: PreBind of its claims (when it has any), then the bind.

        ``slot_held``: the caller took a bind slot (Pods without claims). A Pod with claims takes
        its slot only after PreBind, which can wait up to the bind timeout for a claim: waiting
        claims must not hold the slots every other Pod's bind needs (upstream runs each binding
        cycle in its own goroutine, with no cap)."""
        failure: str | None = None
        try:
            if info.volume_reasons is not None:
                if not await self._pre_bind(pod, info, node):
                    return
                if not slot_held:
                    await self._bind_slots.acquire()
                    slot_held = True
            await self.client.bind(info.namespace, info.name, node, pod_uid=info.uid)
        except FATAL_TYPES:
            raise
        except Exception as e:
            # any bind error, a transport one too (upstream handleBindingCycleError): forget the
            # assumption and requeue with backoff, or the Pod holds its Node's room for ever; then
            # the FailureHandler's Event and PodScheduled=False (SchedulerError)
            if self._assumed.get(info.uid) == node:
                self._forget(info.uid)
            SCHEDULE_ATTEMPTS.labels(self.scheduler_name, "error").inc()
            if isinstance(e, ApiError) and is_not_found(e):
                return
            if is_bug(e):
                log.error("binding %s to %s failed: %s: %s", info.key, node, type(e).__name__, e, exc_info=e)
            else:
                log.info("binding %s to %s failed: %s: %s", info.key, node, type(e).__name__, e)
            self.queue.add(info.uid, info.namespace, info.name, info.priority, self._now())
            self.queue.failed(info.uid, self._now())
            why = (e.message or str(e)) if isinstance(e, ApiError) else str(e) or type(e).__name__
            failure = f'running Bind plugin "DefaultBinder": {why}'
        finally:
            if slot_held:
                self._bind_slots.release()
        if failure is not None:
            await self._record_failure(pod, REASON_SCHEDULER_ERROR, failure)
            return
        SCHEDULE_ATTEMPTS.labels(self.scheduler_name, "scheduled").inc()
        if self.record_scheduled_events:
            self.recorder.event(pod, "Normal", "Scheduled",
                                f"Successfully assigned {info.namespace}/{info.name} to {node}")

    async def _pre_bind(self, pod: Obj, info: PodInfo, node: str) -> bool:
        """VolumeBinding's PreBind for a Pod with claim volumes
        (:func:`pumice.scheduler.default.bindvolumes.bind_pod_volumes`); on failure the
        assumption is forgotten, the Pod goes back to the queue with a ``FailedScheduling``
        Event and ``PodScheduled=False`` (reason ``SchedulerError``), and False is returned."""
        node_obj = self._nodes.store.get(None, node) or {}
        labels = (node_obj.get("metadata") or {}).get("labels") or {}
        try:
            await bind_pod_volumes(self.client, self.volumes, pod, node, labels, self.clock)
            return True
        except FATAL_TYPES:
            raise
        except Exception as e:  # VolumeBindingError, ApiError, a transport error: all undo the cycle
            error = e
        if self._assumed.get(info.uid) == node:
            self._forget(info.uid)
        SCHEDULE_ATTEMPTS.labels(self.scheduler_name, "error").inc()
        log.info("binding the volumes of %s on %s failed: %s", info.key, node, error)
        self.queue.add(info.uid, info.namespace, info.name, info.priority, self._now())
        self.queue.failed(info.uid, self._now())
        await self._record_failure(pod, REASON_SCHEDULER_ERROR, f'running PreBind plugin "VolumeBinding": {error}')
        return False

    async def _record_failure(self, pod: Obj, reason: str, message: str) -> None:
        self.recorder.event(pod, "Warning", "FailedScheduling", message)
        await self._write_pod_scheduled(pod, reason, message)

    async def _write_pod_scheduled(self, pod: Obj, reason: str, message: str) -> None:
        """Set ``PodScheduled=False`` with ``reason``/``message`` unless it already says so."""
        old = (pod.get("status") or {}).get("conditions") or []
        conds = with_condition(old, {"type": "PodScheduled", "status": "False", "reason": reason,
                                     "message": message, "lastProbeTime": None}, rfc3339(self.clock.now()))
        if conds == old:
            return
        try:
            await patch_status_conditions(self.client, POD, pod, conds)
        except ApiError as e:
            md = pod["metadata"]
            log.info("updating PodScheduled of %s/%s failed: %s", md.get("namespace"), md["name"], e)

    # -- lifecycle ---------------------------------------------------------------------------
    async def _flush_loop(self) -> None:
        """Flush the queue every second from the start (upstream's 1-s flushBackoffQCompleted and
        flushUnschedulablePodsLeftover), skipping the seconds in which no Pod is parked: the
        flushes that run fall on the same instants, and an idle stretch costs no wake-ups (which
        under ``pumice simulate``'s virtual clock are the wall time of an idle stretch)."""
        origin = self.clock.monotonic()
        tick = 0
        while True:
            await self.queue.wait_parked()
            now = self.clock.monotonic()
            # the first whole second after now (the epsilon absorbs float error in the clock)
            tick = max(tick + 1, math.floor(now - origin + 1e-9) + 1)
            await self.clock.sleep(origin + tick - now)
            self.queue.flush(self._now())

    async def _schedule_loop(self) -> None:
        while True:
            try:
                # A cycle whose Pod is ready does not suspend, so up to BATCH cycles run per turn of
                # the event loop; on a busy loop one cycle per turn would cap the rate.
                await self.schedule_one()
                for _ in range(BATCH - 1):
                    if not self.queue.active_count:
                        break
                    await self.schedule_one()
            except asyncio.CancelledError:
                raise
            except FATAL_TYPES:
                raise  # not retried: the scheduler ends (see FATAL_TYPES)
            except Exception:
                log.exception("scheduling cycle failed")
                await self.clock.sleep(0.1)
            await asyncio.sleep(0)

    async def start(self) -> None:
        """Start informers (if owned), wait for their caches, then the scheduling loops."""
        await self.informers.start()
        await self.informers.wait_for_cache_sync([self._pods, self._nodes, self._services, *self._controllers.values(),
                                                  *self._volume_informers])
        self._loops = [asyncio.create_task(self._flush_loop(), name="scheduler flush loop"),
                       asyncio.create_task(self._schedule_loop(), name="scheduler schedule loop")]
        for task in self._loops:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _informer_failed(self, inf: Any, e: BaseException) -> None:
        """An informer this scheduler owns stopped for good (a MemoryError): its cache no longer
        follows the API, so the scheduler stops and :meth:`run` raises ``e``."""
        if self._failure is None:
            self._failure = e
        self._stopped.set()

    async def run(self, stop_event: asyncio.Event | None = None) -> None:
        """Run until ``stop_event`` is set (or :meth:`stop` is called).

        Raises:
            MemoryError: (any of ``pumice._util.errors.FATAL_TYPES``) what a scheduling loop, an
                informer the scheduler owns or a one-shot task (a bind, a PodScheduled write)
                ended with; after the scheduler stopped. A loop's other error is raised too.
        """
        await self.start()
        loops = list(self._loops)  # not the one-shot tasks in _tasks: their end is watch_task's (_one_shot_failed)
        waiters: list[asyncio.Future[Any]] = [asyncio.create_task(self._stopped.wait())]
        if stop_event is not None:
            waiters.append(asyncio.create_task(stop_event.wait()))
        try:
            await asyncio.wait([*waiters, *loops], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()
            await self.stop()
        for t in loops:
            if t.done() and not t.cancelled() and self._failure is None:
                # a loop only ends with an error; one that returned is a bug, not a stop
                self._failure = t.exception() or RuntimeError(f"{t.get_name()} returned")
        if self._failure is not None:
            raise self._failure

    async def stop(self) -> None:
        """Cancel the loops and in-flight binds; stop the informers this scheduler created."""
        self._stopped.set()
        for t in list(self._tasks):
            t.cancel()
        for t in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        await self.recorder.close()
        if self._own_informers:
            await self.informers.stop()


async def run_scheduler(
    client: KubeClient, *, clock: Clock | None = None, scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    stop_event: asyncio.Event | None = None,
) -> None:
    """Run the default scheduler until ``stop_event`` is set (forever when None)."""
    sched = DefaultScheduler(client, clock=clock, scheduler_name=scheduler_name)
    await sched.run(stop_event)
