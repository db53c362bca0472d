"""The live scheduler cache: informer-fed objects, per-cycle snapshots, asynchronous binder,
evictor and status writers.

Tasks handed to the binder are *assumed* on their node until the informer shows the bind (or
the bind fails, and the Pod is Pending again at the next snapshot); evicted tasks stay
Releasing until the Pod disappears (or the eviction fails). PodGroup status (phase,
conditions, counts) and Queue ``status.allocated`` are written when a session closes, only
when they changed; PodGroup Events and Pod ``PodScheduled`` conditions likewise.

Mirrors: volcano pkg/scheduler/cache/cache.go (Snapshot, AddBindTask, Evict, UpdateJobStatus,
UpdateQueueStatus), event_handlers.go, and the default binder/evictor.
Deviates: one asyncio task per bind/evict instead of a batched bind channel.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from pumice._util.clock import Clock, rfc3339
from pumice._util.errors import FATAL_TYPES, watch_task
from pumice.api import Obj, quantity
from pumice.api.meta import get_condition
from pumice.api.scheme import HYPER_NODE, NODE_SHARD, POD_GROUP, PRIORITY_CLASS, QUEUE, ResourceKind
from pumice.api.volcano.sharding import shard_nodes
from pumice.client.base import ApiError, KubeClient, is_not_found
from pumice.client.informer import Informer, SharedInformerFactory
from pumice.runtime.events import EventRecorder
from pumice.scheduler.default.bindvolumes import bind_pod_volumes
from pumice.scheduler.default.volumebinding import InformerListers
from pumice.scheduler.volcano.api.queue_info import ClusterInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo, has_pod_affinity
from pumice.scheduler.volcano.cache.incremental import IncrementalSnapshot, snapshot_digest
from pumice.scheduler.volcano.cache.snapshot import build_snapshot
from pumice.scheduler.volcano.framework.session import CloseResult, status_changed

log = logging.getLogger("pumice.scheduler.volcano")

SNAPSHOT_MODES = ("full", "incremental", "verify")
"""How :meth:`SchedulerCache.snapshot` builds: from every object each time, kept across sessions,
or both and compared."""


TASK_UPDATER_WORKERS = 16
"""How many Pod-condition writes run at once: the workers that drain the queued
``PodScheduled`` conditions. Mirrors: volcano pkg/scheduler/cache/cache.go ``taskUpdaterWorker``
(RecordJobStatusEvent updates a job's unschedulable tasks with that many workers)."""


class SnapshotMismatch(AssertionError):
    """``verify`` mode: the incremental snapshot differs from the full build."""



def allocated_patch(current: Obj, desired: dict[str, str]) -> dict[str, str | None] | None:
    """The JSON merge patch of ``status.allocated`` that turns ``current`` into ``desired``:
    ``None`` when they are equal (same resource names, equal quantities), else ``desired`` with
    ``null`` for every resource that went to zero (absent from ``desired``), so that it is removed
    (a merge patch of ``{}`` removes nothing). Mirrors: volcano pkg/scheduler/cache
    (UpdateQueueStatus writes the whole status; the effect on ``allocated`` is the same)."""
    def same(a: Any, b: str) -> bool:
        try:
            return bool(quantity.parse_quantity(str(a)) == quantity.parse_quantity(b))
        except quantity.QuantityError:
            return str(a) == b

    if set(current) == set(desired) and all(same(current[k], v) for k, v in desired.items()):
        return None
    patch: dict[str, str | None] = {k: None for k in sorted(current) if k not in desired}
    patch.update(desired)
    return patch

class SchedulerCache:
    """Informers for Pods, Nodes, HyperNodes, PodGroups, Queues, PriorityClasses and Namespaces.

    Implements the session's cache seam (:meth:`bind`, :meth:`evict`), which only *queue* the
    API writes; :meth:`flush` awaits them (used at shutdown and by tests).
    """

    def __init__(self, client: KubeClient, *, clock: Clock, scheduler_name: str = "volcano",
                 sharding_mode: str = "none", shard_name: str | None = None, snapshot_mode: str = "full") -> None:
        if snapshot_mode not in SNAPSHOT_MODES:
            raise ValueError(f"snapshot_mode {snapshot_mode!r}: one of {', '.join(SNAPSHOT_MODES)}")
        self.client = client
        self.clock = clock
        self.scheduler_names = (scheduler_name,)
        scheme = client.scheme
        self.pod_kind = _must(scheme, "pods")
        self.node_kind = _must(scheme, "nodes")
        self.ns_kind = _must(scheme, "namespaces")
        self.pg_kind = scheme.resolve_or_add("podgroups.scheduling.volcano.sh", POD_GROUP)
        self.queue_kind = scheme.resolve_or_add("queues.scheduling.volcano.sh", QUEUE)
        self.pc_kind = scheme.resolve_or_add("priorityclasses.scheduling.k8s.io", PRIORITY_CLASS)
        self.hn_kind = scheme.resolve_or_add("hypernodes.topology.volcano.sh", HYPER_NODE)
        self.sharding_mode = sharding_mode
        self.shard_name = shard_name or scheduler_name
        self.shard_kind = scheme.resolve_or_add("nodeshards.shard.volcano.sh", NODE_SHARD) if sharding_mode in ("hard", "soft") else None
        self.nodes_in_use: list[str] | None = None
        self.preferred_nodes: set[str] | None = None
        self.event_kind = scheme.resolve("events")
        self.factory = SharedInformerFactory(client, clock=clock)
        self.informers: dict[str, Informer] = {
            "PriorityClass": self.factory.informer(self.pc_kind),
            "Namespace": self.factory.informer(self.ns_kind),
            "Queue": self.factory.informer(self.queue_kind),
            "Node": self.factory.informer(self.node_kind),
            "HyperNode": self.factory.informer(self.hn_kind),
            **({"NodeShard": self.factory.informer(self.shard_kind)} if self.shard_kind is not None else {}),
            "PodGroup": self.factory.informer(self.pg_kind),
            "Pod": self.factory.informer(self.pod_kind),
            # what the predicates plugin's VolumeBinding reads (upstream's PVC/PV/StorageClass listers)
            "PersistentVolumeClaim": self.factory.informer(_must(scheme, "persistentvolumeclaims")),
            "PersistentVolume": self.factory.informer(_must(scheme, "persistentvolumes")),
            "StorageClass": self.factory.informer(_must(scheme, "storageclasses")),
        }
        self.volume_listers = InformerListers(self.informers["PersistentVolumeClaim"],
                                              self.informers["PersistentVolume"], self.informers["StorageClass"])
        self.assumed: dict[str, str] = {}
        """``<ns>/<name>`` -> the Node of a bind the informer has not shown yet."""
        self.assumed_uids: dict[str, str] = {}
        """``<ns>/<name>`` -> uid of the Pod that :attr:`assumed` holds for."""
        self.assumed_annotations: dict[str, dict[str, str]] = {}
        """``<ns>/<name>`` -> the annotations its Binding carries (e.g. ``volcano.sh/gpu-index``),
        shown on the assumed Pod until the informer shows the bound one."""
        self.releasing: dict[str, str] = {}
        """``<ns>/<name>`` -> uid of a Pod being evicted. The uid matters: the vcjob controller
        recreates an evicted Pod under the same name, and the successor is a new Pod, not a
        Releasing one (upstream's cache keys tasks by uid)."""
        self.pending_writes: set[asyncio.Task[None]] = set()
        self.failure: BaseException | None = None
        """The FATAL_TYPES error (MemoryError) a write task ended with; :meth:`wait_close_writes`
        raises it, so the scheduler ends instead of carrying on."""
        self.abandon_writes: Callable[[], bool] | None = None
        """When set and it answers True (a stop was asked for), a queued write that has not
        started yet is dropped instead of sent: a session's close may queue a write per Pending
        Pod (thousands for a wide job), and a stop waits for those it has not dropped. What is
        dropped is rewritten by the next scheduler that runs (the API objects are the truth)."""
        self._volume_binds: set[asyncio.Task[None]] = set()
        self.last_events: dict[str, tuple[str, str]] = {}
        self._recorder: EventRecorder | None = None
        self.last_pod_conditions: dict[str, tuple[str, str, str]] = {}
        """``<ns>/<name>`` -> (uid, reason, message) last written (uid: a recreated Pod gets its own)."""
        self._queued_conditions: dict[str, tuple[str, str, str, str, str]] = {}
        """``<ns>/<name>`` -> (namespace, name, reason, message, nominated) of a Pod-condition write
        queued but not started, in queueing order: a newer condition for the Pod replaces it there
        instead of queueing a second write (see :meth:`task_unschedulable`); at most
        :data:`TASK_UPDATER_WORKERS` condition workers take them off in that order."""
        self._condition_workers: set[asyncio.Task[None]] = set()
        self._queued_failed_events: dict[str, tuple[Obj, str]] = {}
        """``<ns>/<name>`` -> (Pod, message) of a ``FailedScheduling`` Event queued but not started,
        in queueing order (a newer Event for the Pod replaces it there); at most
        :data:`TASK_UPDATER_WORKERS` event workers take them off in that order, for as many
        recorder writers."""
        self._event_workers: set[asyncio.Task[None]] = set()
        self._close_writes: set[asyncio.Task[None]] = set()
        """The PodGroup and Queue status writes :meth:`write_close` queued that have not ended
        (:meth:`wait_close_writes` waits for them and for the condition workers)."""
        self.bind_errors = 0
        self.dropped_writes = 0
        """Pod-condition and ``FailedScheduling`` Event writes dropped because a stop was asked for."""
        self._allocated_same: dict[str, tuple[Obj, dict[str, str]]] = {}
        """Queue -> (its object, a ``status.allocated`` list) for which :func:`allocated_patch`
        gave None (nothing to write)."""
        self.snapshot_mode = snapshot_mode
        self.snapshot_mismatches = 0
        self.incremental: IncrementalSnapshot | None = None
        if snapshot_mode != "full":
            self.incremental = IncrementalSnapshot(self.informers, self.scheduler_names, self._overlay, self._forget,
                                                   self._memo_mismatch if snapshot_mode == "verify" else None)

    async def start(self, timeout: float | None = None) -> bool:
        await self.factory.start()
        return await self.factory.wait_for_cache_sync(timeout=timeout)

    async def stop(self) -> None:
        for t in list(self._volume_binds):
            t.cancel()
        await self.flush()
        await self.factory.stop()

    async def flush(self) -> None:
        while self.pending_writes:
            await asyncio.gather(*list(self.pending_writes), return_exceptions=True)

    async def wait_close_writes(self) -> None:
        """Wait until the last :meth:`write_close`'s PodGroup and Queue status writes have ended
        and no Pod-condition write is queued or running (its ``FailedScheduling`` Events, binds
        and evictions are not waited for).

        The live scheduler awaits this before its next session, as upstream's session close
        returns only once JobUpdater.UpdateAll has written every job's status and its tasks'
        conditions: a session cannot queue writes faster than the API server takes them (a wide
        gang's Pending count, in each Pending Pod's message, changes with every Pod created or
        deleted, so every session rewrites every Pending Pod). Mirrors: volcano
        pkg/scheduler/framework/session.go closeSession -> JobUpdater.UpdateAll.

        Raises:
            MemoryError: (any of FATAL_TYPES) what a write task ended with (:attr:`failure`).
        """
        while self._close_writes or self._condition_workers:
            await asyncio.gather(*self._close_writes, *self._condition_workers, return_exceptions=True)
        if self.failure is not None:
            raise self.failure

    # ----- snapshot -----------------------------------------------------------------------
    def objects(self) -> list[Obj]:
        out: list[Obj] = []
        pods = self.informers["Pod"].lister.list()
        live = set()
        for kind, inf in self.informers.items():
            items = pods if kind == "Pod" else inf.lister.list()
            for o in sorted(items, key=_order_key):
                o = dict(o)
                o.setdefault("kind", kind)
                if kind == "Pod":
                    key = _key(o)
                    live.add(key)
                    o = self._overlay(key, o)
                out.append(o)
        for key in [k for k in self.assumed if k not in live]:
            self._forget_assumed(key)
        for key in [k for k in self.releasing if k not in live]:
            self.releasing.pop(key, None)
        return out

    def _overlay(self, key: str, pod: Obj) -> Obj:
        node = (pod.get("spec") or {}).get("nodeName")
        uid = (pod.get("metadata") or {}).get("uid")
        if key in self.assumed:
            if node or not _same_pod(self.assumed_uids.get(key), uid):
                self._forget_assumed(key)
            else:
                pod = copy.deepcopy(pod)
                pod["spec"]["nodeName"] = self.assumed[key]
                if self.assumed_annotations.get(key):
                    pod["metadata"].setdefault("annotations", {}).update(self.assumed_annotations[key])
        if key in self.releasing and not _same_pod(self.releasing[key], uid):
            # the evicted Pod is gone and another was created under its name
            self.releasing.pop(key, None)
        if key in self.releasing and not (pod.get("metadata") or {}).get("deletionTimestamp"):
            pod = copy.deepcopy(pod)
            pod["metadata"]["deletionTimestamp"] = rfc3339(self.clock.now())
        return pod

    def _forget_assumed(self, key: str) -> None:
        self.assumed.pop(key, None)
        self.assumed_uids.pop(key, None)
        self.assumed_annotations.pop(key, None)

    def _forget(self, key: str) -> None:
        self._forget_assumed(key)
        self.releasing.pop(key, None)

    def _pod_changed(self, key: str) -> None:
        if self.incremental is not None:
            self.incremental.pod_changed(key)

    def _memo_mismatch(self, what: str) -> None:
        self.snapshot_mismatches += 1
        raise SnapshotMismatch(f"a session's memoized result differs from a fresh computation: {what}")

    def snapshot(self) -> ClusterInfo:
        """The scheduling snapshot; in hard sharding mode only this scheduler's shard's Nodes
        (:func:`pumice.api.volcano.sharding.shard_nodes`), remembered for the status write; in
        soft mode every Node, the shard's kept in ``preferred_nodes`` (the agent scheduler
        ranks them first).

        ``snapshot_mode`` ``incremental`` (the batch scheduler's) keeps the state across sessions
        (:mod:`pumice.scheduler.volcano.cache.incremental`): the snapshot must be consumed by
        one session before the next is taken. ``verify`` also builds the full snapshot and
        raises :class:`SnapshotMismatch` when the two differ, or when a result the
        session's plugins take from the :class:`JobMemo` differs from a fresh computation (for tests). Sharding, or an object
        without ``creationTimestamp``, uses the full build. Raises what an informer of the cache
        stopped with for good (a MemoryError: ``SharedInformerFactory.failure``), as its objects no
        longer follow the API, or what a write task ended with (:attr:`failure`): every loop that
        drives the cache takes a snapshot per session, ``pumice simulate``'s ``TriggeredLoop``
        too, which never calls :meth:`wait_close_writes`.
        """
        if self.factory.failure is not None:
            raise self.factory.failure  # an informer stopped for good (MemoryError): no stale snapshot
        if self.failure is not None:
            raise self.failure  # a write task died of it (every loop takes a snapshot per session)
        inc = self.incremental
        if inc is not None and self.shard_kind is None and not inc.exotic:
            snap = inc.snapshot(self.clock.now())
            snap.volumes = self.volume_listers
            if self.snapshot_mode == "verify" and not inc.exotic:
                full = build_snapshot(self.objects(), clock=self.clock, scheduler_names=self.scheduler_names)
                a, b = snapshot_digest(snap), snapshot_digest(full)
                scan = frozenset(n for n, ni in full.nodes.items() if any(has_pod_affinity(t) for t in ni.tasks.values()))
                if snap.pod_affinity_nodes != scan:
                    self.snapshot_mismatches += 1
                    raise SnapshotMismatch(f"pod-affinity Nodes {sorted(snap.pod_affinity_nodes or ())} != "
                                           f"{sorted(scan)} of the full build")
                if a != b:
                    self.snapshot_mismatches += 1
                    diff = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
                    raise SnapshotMismatch(f"incremental snapshot differs from the full build at item {diff}: "
                                           f"{a[diff] if diff < len(a) else None!r} != {b[diff] if diff < len(b) else None!r}")
            return snap
        objs = self.objects()
        if self.shard_kind is not None:
            usable = shard_nodes([o for o in objs if o.get("kind") == "NodeShard"], self.shard_name)
            self.preferred_nodes = set(usable) if usable is not None and self.sharding_mode == "soft" else None
            if usable is not None:
                if self.sharding_mode == "hard":
                    objs = [o for o in objs if o.get("kind") != "Node" or (o.get("metadata") or {}).get("name") in usable]
                self.nodes_in_use = sorted(usable)
        snap = build_snapshot(objs, clock=self.clock, scheduler_names=self.scheduler_names)
        snap.volumes = self.volume_listers
        return snap

    def write_shard_status(self) -> None:
        """Publish the Nodes the last snapshot used as ``status.nodesInUse`` of this scheduler's
        NodeShard (only between cycles, so the published set never understates a running one)."""
        if self.shard_kind is None or self.nodes_in_use is None:
            return
        cur = next((o for o in self.informers["NodeShard"].lister.list() if o["metadata"]["name"] == self.shard_name), None)
        if cur is None or ((cur.get("status") or {}).get("nodesInUse") or []) == self.nodes_in_use:
            return
        body = {"status": {"nodesInUse": self.nodes_in_use, "lastUpdateTime": rfc3339(self.clock.now())}}
        self._spawn(self._patch_shard(body))

    async def _patch_shard(self, body: Obj) -> None:
        try:
            await self.client.patch(self.shard_kind, self.shard_name, body, patch_type="merge", subresource="status")  # type: ignore[arg-type]
        except FATAL_TYPES:
            raise  # not logged and carried on: the write task ends with it (see failure)
        except Exception as e:
            log.warning("failed to write NodeShard %s status: %s", self.shard_name, e)

    # ----- session seam -------------------------------------------------------------------
    def bind(self, task: TaskInfo, node_name: str) -> None:
        self.assumed[task.key] = node_name
        self.assumed_uids[task.key] = _pod_uid(task)
        if task.pod_annotations:
            self.assumed_annotations[task.key] = dict(task.pod_annotations)
        else:
            self.assumed_annotations.pop(task.key, None)
        self._pod_changed(task.key)
        t = self._spawn(self._bind(task, node_name))
        if task.has_claim_volumes:  # its PreBind may wait for the claims: stop() cancels it
            self._volume_binds.add(t)
            t.add_done_callback(self._volume_binds.discard)

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.releasing[task.key] = _pod_uid(task)
        self._pod_changed(task.key)
        self._spawn(self._evict(task, reason))

    def _spawn(self, coro: Any, *, abandonable: bool = True) -> asyncio.Task[None]:
        """Run the write ``coro`` as a task kept in :attr:`pending_writes`; ``abandonable``: wrapped
        by :meth:`_unless_abandoned` (``False`` for a write that checks :attr:`abandon_writes`
        itself, after it has taken its turn's bookkeeping)."""
        name = f"volcano cache {coro.__name__}"
        if abandonable and self.abandon_writes is not None:
            coro = self._unless_abandoned(coro)
        t = asyncio.get_running_loop().create_task(coro, name=name)
        self.pending_writes.add(t)
        t.add_done_callback(self.pending_writes.discard)
        watch_task(t, owner="scheduler cache", logger=log, on_fatal=self._write_failed)
        return t

    def _write_failed(self, e: BaseException) -> None:
        """A write task's FATAL_TYPES error: the first is kept in :attr:`failure` (the next
        :meth:`snapshot` or :meth:`wait_close_writes` raises it). Any other exception (one a
        write did not catch) is logged with the task's name and traceback
        (:func:`pumice._util.errors.watch_task`)."""
        if self.failure is None:
            self.failure = e

    def _close_write(self, coro: Any) -> None:
        """:meth:`_spawn` a status write of :meth:`write_close`, kept in :attr:`_close_writes` until it ends."""
        t = self._spawn(coro)
        self._close_writes.add(t)
        t.add_done_callback(self._close_writes.discard)

    async def _unless_abandoned(self, coro: Any) -> None:
        """``coro``, unless :attr:`abandon_writes` answers True when its turn comes."""
        if self.abandon_writes is not None and self.abandon_writes():
            coro.close()
            return
        await coro

    async def _bind(self, task: TaskInfo, node_name: str) -> None:
        """Bind (after VolumeBinding's PreBind for a task with claim volumes: its waiting claims
        get their volumes on the Node and are waited for, as upstream's predicates plugin runs
        it before the bind)."""
        try:
            if task.has_claim_volumes:
                node = self.informers["Node"].lister.get(None, node_name) or {}
                await bind_pod_volumes(self.client, self.volume_listers, task.pod, node_name,
                                       (node.get("metadata") or {}).get("labels") or {}, self.clock)
            if task.pod_annotations:
                await self.client.bind(task.namespace, task.name, node_name, pod_uid=task.uid,
                                       annotations=task.pod_annotations)
            else:
                await self.client.bind(task.namespace, task.name, node_name, pod_uid=task.uid)
        except FATAL_TYPES:
            raise  # not logged and carried on: the write task ends with it (see failure)
        except Exception as e:
            self.bind_errors += 1
            if self.assumed_uids.get(task.key) == _pod_uid(task):
                self._forget_assumed(task.key)
            self._pod_changed(task.key)
            log.warning("failed to bind %s to %s: %s", task.key, node_name, e)
            await self._pod_condition(
                task.namespace, task.name, "SchedulerError", f"failed to bind to node {node_name}: {e}"
            )

    async def _evict(self, task: TaskInfo, reason: str) -> None:
        """Evict ``task``'s Pod (the Eviction API; a plain delete where eviction is refused),
        after recording upstream's Events: a Warning ``Evict`` "Pod is evicted, because of
        <reason>" on the Pod (the default evictor's) and a Normal ``Evict`` "<reason>" on its
        PodGroup (cache.go Evict). Every eviction of every action and plugin comes here.
        Deviates: the Pod's ``Ready`` condition is not set to False reason ``Evict`` first."""
        pod = {**task.pod, "apiVersion": "v1", "kind": "Pod"}
        await self._event(pod, "Warning", "Evict", f"Pod is evicted, because of {reason}")
        pg = self.informers["PodGroup"].lister.get_by_key(task.job) if task.job else None
        if pg is not None:
            await self._event(pg, "Normal", "Evict", reason)
        try:
            await self.client.evict(task.namespace, task.name)
        except ApiError as e:
            if is_not_found(e):
                return
            try:
                await self.client.delete(self.pod_kind, task.name, task.namespace)
            except FATAL_TYPES:
                raise  # not logged and carried on: the write task ends with it (see failure)
            except Exception as e2:
                if not is_not_found(e2):
                    self._unrelease(task)
                    log.warning("failed to evict %s (%s): %s", task.key, reason, e2)
        except FATAL_TYPES:
            raise  # not logged and carried on: the write task ends with it (see failure)
        except Exception as e:
            self._unrelease(task)
            log.warning("failed to evict %s (%s): %s", task.key, reason, e)

    def _unrelease(self, task: TaskInfo) -> None:
        """The eviction of ``task`` failed: it is not Releasing any more (unless the name now
        belongs to another Pod, whose bookkeeping is its own)."""
        if self.releasing.get(task.key) == _pod_uid(task):
            self.releasing.pop(task.key, None)
        self._pod_changed(task.key)

    async def _pod_condition(self, ns: str, name: str, reason: str, message: str, nominated: str = "") -> None:
        cond = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastTransitionTime": rfc3339(self.clock.now()),
        }
        status: Obj = {"conditions": [cond]}
        if nominated:
            status["nominatedNodeName"] = nominated
        try:
            await self.client.patch(self.pod_kind, name, {"status": status}, ns, patch_type="strategic", subresource="status")
        except FATAL_TYPES:
            raise  # not logged and carried on: the write task ends with it (see failure)
        except Exception as e:
            if is_not_found(e):  # the Pod went meanwhile
                log.debug("pod condition for %s/%s not written: %s", ns, name, e)
                return
            # upstream's job updater logs taskUnschedulable's error and the next session, seeing
            # the Pod's condition unchanged, writes it again: so here the condition is forgotten
            log.warning("failed to update unschedulable task status %s/%s (%s): %s", ns, name, reason, e)
            key = f"{ns}/{name}"
            if self.last_pod_conditions.get(key, ("",))[1:] == (reason, message):
                self.last_pod_conditions.pop(key, None)

    # ----- close-time writes --------------------------------------------------------------
    def write_close(self, res: CloseResult) -> None:
        """Queue the PodGroup, Queue, Event and Pod-condition writes of one closed session."""
        pgs = self.informers["PodGroup"].lister
        for key in res.changed:
            cur = pgs.get_by_key(key)
            if cur is None:
                continue
            new = res.pod_groups[key]
            if not status_changed(cur.get("status") or {}, new):
                continue
            self._close_write(self._patch_pg(cur, new))
        for key, ann in res.pod_group_annotations.items():
            cur = pgs.get_by_key(key)
            if cur is not None and any(((cur.get("metadata") or {}).get("annotations") or {}).get(k) != v for k, v in ann.items()):
                self._close_write(self._patch_pg_annotations(cur, ann))
        queues = self.informers["Queue"].lister
        same = self._allocated_same
        for qname, alloc in res.queue_allocated.items():
            q = queues.get_by_key(qname)
            if q is None:
                continue
            # a pure function of the two: known to be None for this very object (the informer
            # replaces an object that changes, never edits it) and an equal desired list
            seen = same.get(qname)
            if seen is not None and seen[0] is q and (seen[1] is alloc or seen[1] == alloc):
                continue
            patch = allocated_patch((q.get("status") or {}).get("allocated") or {}, alloc)
            if patch is not None:
                same.pop(qname, None)
                self._close_write(self._patch_queue(qname, patch))
            else:
                same[qname] = (q, alloc)
        for pg_key, etype, reason, message in res.events:
            if self.last_events.get(pg_key) == (reason, message):
                continue
            self.last_events[pg_key] = (reason, message)
            if self.event_kind is None:  # Events off: :meth:`_event` would write nothing
                continue
            cur = pgs.get_by_key(pg_key)
            if cur is not None:
                self._spawn(self._event(cur, etype, reason, message))
        for pod_key, (reason, message, nominated) in res.pod_conditions.items():
            self.task_unschedulable(pod_key, reason, message, nominated)

    def task_unschedulable(self, pod_key: str, reason: str, message: str, nominated: str = "") -> None:
        """Queue ``PodScheduled=False`` (``reason``, ``message``) on the Pod ``namespace/name`` and
        a Warning ``FailedScheduling`` Event with the message, when the condition changes (nothing
        for an empty message, a Pod gone from the cache, or the condition already written).

        Mirrors: volcano pkg/scheduler/cache/cache.go and pkg/agentscheduler/cache/cache.go
        taskUnschedulable (the Event is recorded whenever the condition is updated).
        """
        if not message:
            return
        pod = self.informers["Pod"].lister.get_by_key(pod_key)
        if pod is None:
            return
        uid = str(pod["metadata"].get("uid") or "")
        if self.last_pod_conditions.get(pod_key) == (uid, reason, message):
            return
        cur = get_condition(pod, "PodScheduled")
        if cur is None or cur.get("reason") != reason or cur.get("message") != message:
            self.last_pod_conditions[pod_key] = (uid, reason, message)
            md = pod["metadata"]
            # A write of this Pod's condition still waiting for its turn takes the newer value
            # instead of a second write queueing behind it: when sessions outpace the API server
            # (a wide gang's message carries its Pending count, which each created or deleted Pod
            # changes), the backlog stays one write per Pod instead of one per Pod per session,
            # and only the last condition, the one a sequence of writes would leave, is written.
            # The same for its Event (client-go's recorder also drops an object's event spam).
            self._queued_conditions[pod_key] = (md.get("namespace", "default"), md["name"], reason, message, nominated)
            self._add_worker(self._queued_conditions, self._condition_workers, self._condition_worker)
            if self.event_kind is not None:
                self._queued_failed_events[pod_key] = ({**pod, "apiVersion": "v1", "kind": "Pod"}, message)
                self._add_worker(self._queued_failed_events, self._event_workers, self._failed_event_worker)

    def _add_worker(self, queued: dict[str, Any], workers: set[asyncio.Task[None]],
                    worker: Callable[[], Awaitable[None]]) -> None:
        """Start one more ``worker`` draining ``queued`` unless :data:`TASK_UPDATER_WORKERS` of
        them, or as many as there are queued writes, already run."""
        running = sum(1 for w in workers if not w.done())  # a done one may not be discarded yet
        if running < min(TASK_UPDATER_WORKERS, len(queued)):
            t = self._spawn(worker(), abandonable=False)
            workers.add(t)
            t.add_done_callback(workers.discard)

    async def _condition_worker(self) -> None:
        """Write the queued Pod conditions, oldest first, until none is left (or a stop was asked
        for: then the rest are dropped, to be rewritten by the next scheduler that runs)."""
        await self._drain("PodScheduled condition", self._queued_conditions, lambda w: self._pod_condition(*w))

    async def _failed_event_worker(self) -> None:
        """Record the queued ``FailedScheduling`` Events, oldest first, until none is left (or a
        stop was asked for: then the rest are dropped)."""
        await self._drain("FailedScheduling Event", self._queued_failed_events,
                          lambda w: self._event(w[0], "Warning", "FailedScheduling", w[1]))

    async def _drain(self, what: str, queued: dict[str, Any], write: Callable[[Any], Awaitable[None]]) -> None:
        """Take the oldest of ``queued`` (``<ns>/<name>`` -> the write's arguments) and ``write``
        it, until none is left; once a stop is asked for, drop the rest (:meth:`_drop_queued`)."""
        while queued:
            if self.abandon_writes is not None and self.abandon_writes():
                self._drop_queued(what, queued)
                return
            await write(queued.pop(next(iter(queued))))

    def _drop_queued(self, what: str, queued: dict[str, Any]) -> None:
        """Drop the writes still ``queued`` after a stop was asked for (the next scheduler that
        runs writes what the Pods then need), saying how many at INFO."""
        if queued:
            log.info("stopping: dropped %d queued %s write(s)", len(queued), what)
            self.dropped_writes += len(queued)
            queued.clear()

    async def _patch_pg(self, cur: Obj, status: Obj) -> None:
        md = cur["metadata"]
        try:
            await self.client.patch(self.pg_kind, md["name"], {"status": status}, md.get("namespace"), patch_type="merge")
        except FATAL_TYPES:
            raise  # not logged and carried on: the write task ends with it (see failure)
        except Exception as e:
            log.warning("failed to update PodGroup %s/%s status: %s", md.get("namespace"), md["name"], e)

    async def _patch_pg_annotations(self, cur: Obj, annotations: dict[str, str]) -> None:
        md = cur["metadata"]
        try:
            await self.client.patch(self.pg_kind, md["name"], {"metadata": {"annotations": annotations}}, md.get("namespace"),
                                    patch_type="merge")
        except FATAL_TYPES:
            raise  # not logged and carried on: the write task ends with it (see failure)
        except Exception as e:
            log.warning("failed to annotate PodGroup %s/%s with %s: %s", md.get("namespace"), md["name"], annotations, e)

    async def _patch_queue(self, name: str, allocated: dict[str, str | None]) -> None:
        body = {"status": {"allocated": allocated}}
        try:
            await self.client.patch(self.queue_kind, name, body, patch_type="merge", subresource="status")
        except ApiError as e:
            if e.code in (404, 405):
                try:
                    await self.client.patch(self.queue_kind, name, body, patch_type="merge")
                except FATAL_TYPES:
                    raise  # not logged and carried on: the write task ends with it (see failure)
                except Exception as e2:
                    log.debug("queue %s status not written: %s", name, e2)
        except FATAL_TYPES:
            raise  # not logged and carried on: the write task ends with it (see failure)
        except Exception as e:
            log.debug("queue %s status not written: %s", name, e)

    async def _event(self, obj: Obj, etype: str, reason: str, message: str) -> None:
        """Record an Event on a PodGroup (or, with ``kind`` set, another object such as a Pod)
        through client-go's correlator semantics (the same reason and message raise the count of
        one Event instead of adding another)."""
        if self.event_kind is None:
            return
        if self._recorder is None:
            # upstream's source component: util.GenerateComponentName(schedulerNames)
            component = self.scheduler_names[0] if len(self.scheduler_names) == 1 else "volcano"
            # as many writers as the FailedScheduling event workers (see EventRecorder's writers)
            self._recorder = EventRecorder(self.client, component, clock=self.clock, writers=TASK_UPDATER_WORKERS)
        if obj.get("kind") != "Pod":
            obj = {**obj, "apiVersion": obj.get("apiVersion", "scheduling.volcano.sh/v1beta1"), "kind": "PodGroup"}
        try:
            await self._recorder.event(obj, etype, reason, message)
        except FATAL_TYPES:
            raise  # not logged and carried on: the write task ends with it (see failure)
        except Exception as e:
            md = obj["metadata"]
            log.warning("event %s on %s %s/%s not written: %s", reason, obj.get("kind"), md.get("namespace"),
                        md["name"], e)


def _must(scheme: Any, name: str) -> ResourceKind:
    rk = scheme.resolve(name)
    if rk is None:
        raise ValueError(f"the client's scheme does not know {name!r}")
    return rk  # type: ignore[no-any-return]


def _pod_uid(task: TaskInfo) -> str:
    """The uid of the Pod behind ``task`` ("" when the Pod has none)."""
    return str((task.pod.get("metadata") or {}).get("uid") or "")


def _same_pod(recorded: str | None, uid: str | None) -> bool:
    """Whether bookkeeping recorded for a Pod of uid ``recorded`` still applies to a Pod of
    ``uid`` (a missing uid on either side cannot tell them apart, so it applies)."""
    return not recorded or not uid or recorded == uid


def _key(o: Obj) -> str:
    md = o.get("metadata") or {}
    ns = md.get("namespace")
    return f"{ns}/{md.get('name')}" if ns else str(md.get("name"))


def _order_key(o: Obj) -> tuple[str, str]:
    md = o.get("metadata") or {}
    return (str(md.get("creationTimestamp") or ""), _key(o))


def keys_of(objs: Iterable[Obj]) -> list[str]:
    return [_key(o) for o in objs]
