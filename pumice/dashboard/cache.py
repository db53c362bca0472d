"""The dashboard's view of the cluster: one shared informer per kind, change signals, history.

:class:`ClusterCache` lists and watches the kinds the pages show (through
:class:`pumice.client.informer.SharedInformerFactory`, so the API server sees one watch per kind)
and offers:

- ``store(kind)``: the informer's read-only store (objects are shared: never mutate them);
- :meth:`ClusterCache.wait_change`: wait until any of the given kinds changed after a version
  (the server-sent-events endpoint uses it to tell pages which parts to re-render);
- ``transitions``: the phase/state transitions the watch saw (Volcano Job and PodGroup phase,
  Queue state, RayCluster state, RayJob jobDeploymentStatus/jobStatus, RayService serviceStatus),
  each ``(epoch seconds, value)``; this is the "status history" of the detail pages. It starts
  with the value seen at the first list, so it covers the time since the dashboard started.

The dashboard reads the API and nothing else: every object here came from a list or watch.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pumice._util.clock import Clock, default_clock
from pumice.api import Obj
from pumice.api import scheme as sk
from pumice.api.scheme import ResourceKind
from pumice.api.volcano import constants as vc
from pumice.client.base import KubeClient
from pumice.client.informer import Informer, SharedInformerFactory, Store, label_index, label_indexer

log = logging.getLogger(__name__)



KINDS: dict[str, ResourceKind] = {
    "Queue": sk.QUEUE,
    "PodGroup": sk.POD_GROUP,
    "Job": sk.VCJOB,
    "RayCluster": sk.RAY_CLUSTER,
    "RayJob": sk.RAY_JOB,
    "RayService": sk.RAY_SERVICE,
    "Node": sk.NODE,
    "Pod": sk.POD,
    "Event": sk.EVENT,
    "Namespace": sk.NAMESPACE,
    "PriorityClass": sk.PRIORITY_CLASS,
    "HyperNode": sk.HYPER_NODE,
}
"""Short kind name (as pages and SSE messages use it) -> the kind listed and watched. Holds every
kind of :data:`pumice.scheduler.volcano.explain.SESSION_KINDS`: the explain panels replay the
scheduler's session on these, as ``pumice explain`` does on the API's lists."""

QUEUE_INDEX = "spec.queue"
JOB_NAME_INDEX = label_index(vc.JOB_NAME_KEY)
INVOLVED_INDEX = "involvedObject.uid"
NODE_INDEX = "spec.nodeName"
RAY_CLUSTER_INDEX = label_index("ray.io/cluster")
GROUP_NAME_INDEX = "annotation:scheduling.k8s.io/group-name"
HISTORY_LEN = 50


def _status_of(kind: str) -> Callable[[Obj], str] | None:
    def st(o: Obj) -> Obj:
        return o.get("status") or {}

    if kind == "Job":
        return lambda o: str((st(o).get("state") or {}).get("phase") or "")
    if kind == "PodGroup":
        return lambda o: str(st(o).get("phase") or "")
    if kind == "Queue":
        return lambda o: str(st(o).get("state") or "")
    if kind == "RayCluster":
        return lambda o: str(st(o).get("state") or "")
    if kind == "RayJob":
        return lambda o: f"{st(o).get('jobDeploymentStatus') or 'New'} / {st(o).get('jobStatus') or '-'}"
    if kind == "RayService":
        return lambda o: str(st(o).get("serviceStatus") or "")
    return None


@dataclass
class Transition:
    """One observed status change: ``at`` (epoch seconds) and the new ``value``."""

    at: float
    value: str


class ClusterCache:
    """Informers for :data:`KINDS` with change versions and status history.

    Args:
        client: the API client (the dashboard's own credentials).
        clock: time source (history timestamps).
        kinds: the short kind names to watch (default: all of :data:`KINDS`).
    """

    def __init__(self, client: KubeClient, *, clock: Clock | None = None,
                 kinds: Iterable[str] | None = None) -> None:
        self.client = client
        self.clock = clock or default_clock()
        self.factory = SharedInformerFactory(client, clock=self.clock)
        self.kinds = list(kinds) if kinds is not None else list(KINDS)
        self.informers: dict[str, Informer] = {}
        self.version = 0
        self.kind_version: dict[str, int] = dict.fromkeys(self.kinds, 0)
        self._changed = asyncio.Event()
        self.transitions: dict[tuple[str, str], deque[Transition]] = {}
        for k in self.kinds:
            inf = self.factory.informer(KINDS[k])
            self.informers[k] = inf
            self._index(k, inf)
            inf.add_event_handler(on_add=self._handler(k), on_update=self._update_handler(k),
                                  on_delete=self._delete_handler(k))

    def _index(self, kind: str, inf: Informer) -> None:
        if kind in ("PodGroup", "Job"):
            inf.add_indexer(QUEUE_INDEX, lambda o: [str((o.get("spec") or {}).get("queue") or vc.DEFAULT_QUEUE)])
        elif kind == "Pod":
            inf.add_indexer(JOB_NAME_INDEX, label_indexer(vc.JOB_NAME_KEY))
            inf.add_indexer(RAY_CLUSTER_INDEX, label_indexer("ray.io/cluster"))
            inf.add_indexer(GROUP_NAME_INDEX, _group_name)
            inf.add_indexer(NODE_INDEX, lambda o: [n] if (n := (o.get("spec") or {}).get("nodeName")) else [])
        elif kind == "Event":
            inf.add_indexer(INVOLVED_INDEX, lambda o: [u] if (u := (o.get("involvedObject") or {}).get("uid")) else [])

    # ------------------------------------------------------------------ lifecycle

    async def start(self, sync_timeout: float | None = 30.0) -> bool:
        """Start every informer; wait up to ``sync_timeout`` s for their first lists.

        Returns False when some kind did not sync in time (e.g. its CRD is not installed: the
        informer keeps retrying with backoff and pages say the kind is not available)."""
        await self.factory.start()
        return await self.factory.wait_for_cache_sync(timeout=sync_timeout)

    async def stop(self) -> None:
        await self.factory.stop()

    # ------------------------------------------------------------------ reading

    def store(self, kind: str) -> Store:
        return self.informers[kind].lister

    def synced(self, kind: str) -> bool:
        inf = self.informers.get(kind)
        return inf is not None and inf.has_synced

    def list(self, kind: str) -> builtins.list[Obj]:
        """Every cached object of ``kind`` (an empty list when the kind is not watched)."""
        inf = self.informers.get(kind)
        return inf.lister.list() if inf is not None else []

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        inf = self.informers.get(kind)
        return inf.lister.get(namespace, name) if inf is not None else None

    def by_index(self, kind: str, index: str, value: str) -> builtins.list[Obj]:
        inf = self.informers.get(kind)
        return inf.lister.by_index(index, value) if inf is not None else []

    def history(self, kind: str, obj: Obj) -> builtins.list[Transition]:
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        return list(self.transitions.get((kind, uid), ()))

    async def wait_change(self, since: int, kinds: Iterable[str], timeout: float) -> bool:
        """Wait until one of ``kinds`` changed after version ``since`` (True) or ``timeout``
        seconds passed (False)."""
        wanted = [k for k in kinds if k in self.kind_version]
        deadline = self.clock.monotonic() + timeout
        while True:
            changed = self._changed  # taken before the check: a bump after it sets this one
            if any(self.kind_version[k] > since for k in wanted):
                return True
            left = deadline - self.clock.monotonic()
            if left <= 0:
                return False
            try:
                await asyncio.wait_for(changed.wait(), timeout=left)
            except TimeoutError:
                return False

    # ------------------------------------------------------------------ handlers

    def _bump(self, kind: str) -> None:
        self.version += 1
        self.kind_version[kind] = self.version
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _record(self, kind: str, obj: Obj) -> None:
        fn = _status_of(kind)
        if fn is None:
            return
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        value = fn(obj)
        if not value:  # a status not written yet is not a state
            return
        hist = self.transitions.setdefault((kind, uid), deque(maxlen=HISTORY_LEN))
        if not hist or hist[-1].value != value:
            hist.append(Transition(self.clock.now(), value))

    def _handler(self, kind: str) -> Callable[[Obj], None]:
        def on_add(obj: Obj) -> None:
            self._record(kind, obj)
            self._bump(kind)

        return on_add

    def _update_handler(self, kind: str) -> Callable[[Obj, Obj], None]:
        def on_update(old: Obj, new: Obj) -> None:
            if old is new:  # resync
                return
            self._record(kind, new)
            self._bump(kind)

        return on_update

    def _delete_handler(self, kind: str) -> Callable[[Obj], None]:
        def on_delete(obj: Obj) -> None:
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            self.transitions.pop((kind, uid), None)
            self._bump(kind)

        return on_delete


def _group_name(pod: Obj) -> list[str]:
    """PodGroup name of a Pod: the ``scheduling.k8s.io/group-name`` annotation (Volcano's key)."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    g = ann.get("scheduling.k8s.io/group-name")
    return [g] if g else []
