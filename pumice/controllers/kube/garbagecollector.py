"""The garbage collector: delete dependents whose owners are gone, honour foreground and orphan.

The collector watches every served kind that can be listed, watched and deleted (except Events),
including custom resources (CustomResourceDefinitions are watched and their kinds added as they
appear), and keeps an ownership graph: uid -> object facts, owner uid -> dependent uids.

- **attemptToDelete(dependent)**: classify each ownerReference as *solid* (owner exists),
  *dangling* (owner absent: not in the graph and a live GET says 404 or another uid) or *waiting*
  (owner is being deleted in the foreground). With a solid owner the dangling and waiting
  references are removed by a patch; otherwise the dependent is deleted: in the foreground when
  its owner waits and it has dependents itself, else as its own finalizers ask (Orphan,
  Foreground) or in the background.
- **processOwner(owner)** for an owner being deleted: with the ``orphan`` finalizer, remove the
  owner's reference from every dependent, then the finalizer; with ``foregroundDeletion``, queue
  every dependent for deletion and remove the finalizer once no dependent with
  ``blockOwnerDeletion: true`` remains.

Mirrors: kubernetes pkg/controller/garbagecollector/{garbagecollector.go (attemptToDeleteItem,
classifyReferences, orphanDependents, processDeletingDependentsItem), graph_builder.go}.
Deviates: virtual nodes are not kept in the graph; an owner missing from the graph is checked
with one GET and remembered as absent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pumice._util.clock import Clock
from pumice.api import Obj
from pumice.api.scheme import CUSTOM_RESOURCE_DEFINITION, ResourceKind
from pumice.client.base import ApiError, KubeClient, is_not_found
from pumice.client.informer import Informer, SharedInformerFactory
from pumice.client.workqueue import QueueShutDown, RateLimitingQueue
from pumice.runtime.manager import Manager

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions


log = logging.getLogger(__name__)

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
_IGNORED = {("", "events"), ("events.k8s.io", "events")}

Item = tuple[str, str]  # ("delete" | "owner", uid)


@dataclass(slots=True)
class GraphNode:
    """One object in the ownership graph."""

    kind: ResourceKind
    namespace: str
    name: str
    uid: str
    owners: list[Obj] = field(default_factory=list)
    finalizers: tuple[str, ...] = ()
    deleting: bool = False
    resource_version: str = ""

    @classmethod
    def of(cls, kind: ResourceKind, obj: Obj) -> GraphNode:
        md = obj.get("metadata") or {}
        # the references are the informer's (read-only, never changed here), not a copy
        return cls(kind, md.get("namespace") or "", md.get("name", ""), md.get("uid", ""),
                   md.get("ownerReferences") or [], tuple(md.get("finalizers") or ()),
                   bool(md.get("deletionTimestamp")), str(md.get("resourceVersion", "")))


def crd_kind(crd: Obj) -> ResourceKind | None:
    """The served storage version of a CRD as a ResourceKind (None when none is served)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
    if not versions or not names.get("plural") or not names.get("kind"):
        return None
    version = next((v for v in versions if v.get("storage")), versions[0])
    subs = tuple(k for k in ("status", "scale") if k in (version.get("subresources") or {}))
    return ResourceKind(spec.get("group", ""), version["name"], names["kind"], names["plural"],
                        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                        singular=names.get("singular", ""), short_names=tuple(names.get("shortNames") or ()),
                        subresources=subs)


class GarbageCollector:
    """Ownership-graph garbage collector (see module docstring).

    Args:
        client: API client (its scheme is extended with CRD kinds as they appear).
        informers: the shared informer factory (the manager's).
        clock: time source for the work queue.
        workers: concurrent attemptToDelete / processOwner workers.
        keep_metrics: count the work queue's metrics (see :class:`RateLimitingQueue`).
    """

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> GarbageCollector:
        """Build the collector and add it to ``mgr`` as a runnable."""
        gc = cls(mgr.client, mgr.informers, mgr.clock, workers=opts.workers, keep_metrics=mgr.keep_metrics)
        mgr.add_runnable(gc.run, name="garbagecollector")
        return gc

    def __init__(self, client: KubeClient, informers: SharedInformerFactory, clock: Clock, *, workers: int = 8,
                 keep_metrics: bool = True) -> None:
        self.client = client
        self.informers = informers
        self.clock = clock
        self.workers = workers
        self.graph: dict[str, GraphNode] = {}
        self.dependents: dict[str, set[str]] = {}
        self.queue: RateLimitingQueue[Item] = RateLimitingQueue("garbagecollector", clock=clock,
                                                                keep_metrics=keep_metrics)
        self._watched: set[tuple[str, str]] = set()
        self._absent: set[str] = set()
        self._synced = asyncio.Event()

    # -- kinds --------------------------------------------------------------------------------
    def watch_kind(self, rk: ResourceKind) -> Informer | None:
        key = (rk.group, rk.plural)
        if key in self._watched or key in _IGNORED:
            return None
        if not {"list", "watch", "delete"} <= set(rk.verbs):
            return None
        self._watched.add(key)
        inf = self.informers.informer(rk)
        inf.add_event_handler(lambda o: self._upsert(rk, o), lambda _o, n: self._upsert(rk, n), self._remove)
        return inf

    def _on_crd(self, crd: Obj) -> None:
        rk = crd_kind(crd)
        if rk is None:
            return
        if self.client.scheme.by_plural(rk.group, rk.version, rk.plural) is None:
            self.client.scheme.add(rk)
        self.watch_kind(self.client.scheme.by_plural(rk.group, rk.version, rk.plural) or rk)

    # -- graph --------------------------------------------------------------------------------
    def _upsert(self, rk: ResourceKind, obj: Obj) -> None:
        node = GraphNode.of(rk, obj)
        if not node.uid:
            return
        old = self.graph.get(node.uid)
        same_owners = old is not None and old.owners == node.owners
        if old is not None and not same_owners:
            for ref in old.owners:
                deps = self.dependents.get(str(ref.get("uid")))
                if deps is not None:
                    deps.discard(node.uid)
        if not same_owners:  # (same owners: the dependents index already holds this node)
            for ref in node.owners:
                self.dependents.setdefault(str(ref.get("uid")), set()).add(node.uid)
        self.graph[node.uid] = node
        self._absent.discard(node.uid)
        if node.owners and not same_owners and not self._owners_solid(node):
            self.queue.add(("delete", node.uid))
        if node.deleting and (ORPHAN in node.finalizers or FOREGROUND in node.finalizers):
            self.queue.add(("owner", node.uid))

    def _owners_solid(self, node: GraphNode) -> bool:
        """Whether every owner of ``node`` is in the graph and not waiting for its dependents
        (deleted in the foreground): attemptToDelete would find nothing to do. The item is not
        queued then, as upstream's graph builder queues a dependent only for an owner it does not
        know (a virtual node); when an owner goes later, its removal (or its foreground deletion)
        queues the dependents."""
        if node.deleting:
            return True  # attemptToDelete skips an object being deleted
        for ref in node.owners:
            owner = self.graph.get(str(ref.get("uid")))
            if owner is None or (owner.deleting and FOREGROUND in owner.finalizers):
                return False
        return True

    def _remove(self, obj: Obj) -> None:
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        node = self.graph.pop(uid, None)
        if node is None:
            return
        self._absent.add(uid)
        for ref in node.owners:
            ouid = str(ref.get("uid"))
            deps = self.dependents.get(ouid)
            if deps is not None:
                deps.discard(uid)
                if not deps:
                    self.dependents.pop(ouid, None)
            owner = self.graph.get(ouid)
            if owner is not None and owner.deleting and FOREGROUND in owner.finalizers:
                self.queue.add(("owner", ouid))
        # in uid order: a set of strings iterates in an order that changes with the process's
        # hash seed, and the order of these deletes decides which writes of other components
        # still find their object (pumice simulate's API write count varied between runs)
        for dep in sorted(self.dependents.get(uid, ())):
            self.queue.add(("delete", dep))

    # -- attemptToDelete ----------------------------------------------------------------------
    async def _classify_missing(self, ref: Obj, namespace: str) -> str:
        uid = str(ref.get("uid"))
        if uid in self._absent:
            return "dangling"
        rk = self.client.scheme.by_api_version_kind(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        if rk is None:
            return "solid"  # unknown kind: never delete on a guess
        try:
            live = await self.client.get(rk, str(ref.get("name")), namespace if rk.namespaced else None)
        except ApiError as e:
            if is_not_found(e):
                self._absent.add(uid)
                return "dangling"
            raise
        md = live.get("metadata") or {}
        if md.get("uid") != uid:
            self._absent.add(uid)
            return "dangling"
        if md.get("deletionTimestamp") and FOREGROUND in (md.get("finalizers") or []):
            return "waiting"
        return "solid"

    async def attempt_to_delete(self, uid: str) -> None:
        node = self.graph.get(uid)
        if node is None or node.deleting or not node.owners:
            return
        classes: dict[str, list[Obj]] = {"solid": [], "dangling": [], "waiting": []}
        for ref in node.owners:
            owner = self.graph.get(str(ref.get("uid")))
            if owner is None:
                cls = await self._classify_missing(ref, node.namespace)
            elif owner.deleting and FOREGROUND in owner.finalizers:
                cls = "waiting"
            else:
                cls = "solid"
            classes[cls].append(ref)
        if not classes["dangling"] and not classes["waiting"]:
            return
        if classes["solid"]:
            gone = {str(r.get("uid")) for r in classes["dangling"] + classes["waiting"]}
            keep = [r for r in node.owners if str(r.get("uid")) not in gone]
            try:
                await self.client.patch(node.kind, node.name, {"metadata": {"ownerReferences": keep, "uid": uid}},
                                        node.namespace or None)
            except ApiError as e:
                if not is_not_found(e):
                    raise
            return
        if classes["waiting"] and self.dependents.get(uid):
            policy = "Foreground"
        elif ORPHAN in node.finalizers:
            policy = "Orphan"
        elif FOREGROUND in node.finalizers:
            policy = "Foreground"
        else:
            policy = "Background"
        try:
            await self.client.delete(node.kind, node.name, node.namespace or None, propagation_policy=policy,
                                     preconditions={"uid": uid})
        except ApiError as e:
            if not is_not_found(e) and e.code != 409:
                raise

    # -- processOwner -------------------------------------------------------------------------
    async def _remove_finalizer(self, node: GraphNode, finalizer: str) -> None:
        rest = [f for f in node.finalizers if f != finalizer]
        try:
            await self.client.patch(node.kind, node.name, {"metadata": {
                "finalizers": rest or None, "resourceVersion": node.resource_version}}, node.namespace or None)
        except ApiError as e:
            if not is_not_found(e):
                raise

    async def process_owner(self, uid: str) -> None:
        node = self.graph.get(uid)
        if node is None or not node.deleting:
            return
        deps = [self.graph[d] for d in sorted(self.dependents.get(uid, ())) if d in self.graph]
        if ORPHAN in node.finalizers:
            for dep in deps:
                keep = [r for r in dep.owners if str(r.get("uid")) != uid]
                try:
                    await self.client.patch(dep.kind, dep.name, {"metadata": {"ownerReferences": keep or None,
                                                                              "uid": dep.uid}}, dep.namespace or None)
                except ApiError as e:
                    if not is_not_found(e):
                        raise
            await self._remove_finalizer(node, ORPHAN)
            return
        if FOREGROUND in node.finalizers:
            blocking = []
            for dep in deps:
                if not dep.deleting:
                    self.queue.add(("delete", dep.uid))
                if any(str(r.get("uid")) == uid and r.get("blockOwnerDeletion") for r in dep.owners):
                    blocking.append(dep)
            if not blocking:
                await self._remove_finalizer(node, FOREGROUND)

    # -- running ------------------------------------------------------------------------------
    async def _worker(self) -> None:
        while True:
            try:
                item = await self.queue.get()
            except QueueShutDown:
                return
            try:
                if item[0] == "delete":
                    await self.attempt_to_delete(item[1])
                else:
                    await self.process_owner(item[1])
                self.queue.forget(item)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.info("garbage collector: %s %s failed: %s", item[0], item[1], e)
                self.queue.add_rate_limited(item)
            finally:
                self.queue.done(item)

    async def run(self) -> None:
        """Watch every deletable kind, wait for the caches, then process the queue until cancelled."""
        informers = [i for i in (self.watch_kind(rk) for rk in list(self.client.scheme)) if i is not None]
        crds = self.informers.informer(CUSTOM_RESOURCE_DEFINITION)
        crds.add_event_handler(self._on_crd, lambda _o, n: self._on_crd(n), None)
        await self.informers.wait_for_cache_sync([*informers, crds])
        self._synced.set()
        tasks = [asyncio.create_task(self._worker(), name=f"gc-worker-{i}") for i in range(self.workers)]
        try:
            await asyncio.gather(*tasks)
        finally:
            self.queue.shutdown()
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await t
