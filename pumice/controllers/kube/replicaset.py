"""The ReplicaSet controller: keep ``spec.replicas`` active Pods matching the selector.

One pass: observe the owned Pods (adopting matching orphans, releasing owned Pods that stopped
matching), create or delete the difference when the scale expectations are satisfied, then write
status (replicas, fullyLabeledReplicas, readyReplicas, availableReplicas, observedGeneration)
once, only if it changed.

- creations go in slow-start batches (1, 2, 4, ...) of at most 500 per sync; a failed create
  stops the batch and lowers the expectation;
- surplus Pods are deleted in the ActivePods ranking (unassigned, Pending, not Ready, ... newest
  first), related Pods counted over the sibling ReplicaSets of the same Deployment;
- expectations (``ns/name``) are raised before writing and lowered as the Pod informer sees the
  creations and deletions, so a lagging cache never causes double creation.

Mirrors: kubernetes pkg/controller/replicaset/replica_set.go (syncReplicaSet, manageReplicas,
getPodsToDelete, slowStartBatch) and replica_set_utils.go (calculateStatus).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pumice._util.clock import Clock
from pumice.api import Obj, meta
from pumice.api.meta import owner_reference
from pumice.api.scheme import POD, REPLICA_SET, REPLICATION_CONTROLLER
from pumice.api.selectors import NOTHING, LabelSelector, from_label_selector
from pumice.client.base import ApiError, KubeClient, is_conflict, is_not_found
from pumice.client.informer import OWNER_UID_INDEX, Informer
from pumice.controllers.kube.podutil import (
    available_in,
    controller_uid,
    deletion_order,
    is_active,
    is_available,
    pod_from_template,
)
from pumice.runtime import Request, Result
from pumice.runtime.events import EventRecorder
from pumice.runtime.expectations import Expectations
from pumice.runtime.manager import Manager

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions


log = logging.getLogger(__name__)

BURST_REPLICAS = 500
ORPHAN_INDEX = "pumice.kube/orphan-namespace"


def orphan_indexer(obj: Obj) -> list[str]:
    """Index value: the namespace of objects without a controller ownerReference."""
    md = obj.get("metadata") or {}
    if md.get("deletionTimestamp") or any(r.get("controller") for r in md.get("ownerReferences") or []):
        return []
    return [md.get("namespace") or ""]


def workload_selector(selector: Obj | None) -> LabelSelector:
    """A workload's ``spec.selector`` (metav1.LabelSelector) as a selector; a nil or empty one
    selects nothing, so a workload with it adopts no Pods (upstream's ReplicaSet and Deployment
    controllers skip an empty selector).

    Raises:
        SelectorError: a matchExpressions operator the API does not know.
    """
    sel = from_label_selector(selector)
    return NOTHING if sel.empty else sel


async def slow_start_batch(count: int, fn: Any, initial: int = 1) -> int:
    """Call ``fn()`` ``count`` times in batches 1, 2, 4, ...; stop after a batch with a failure.
    Returns the number of successful calls."""
    done = 0
    batch = min(initial, count)
    while batch > 0:
        results = await asyncio.gather(*(fn() for _ in range(batch)), return_exceptions=True)
        ok = sum(1 for r in results if not isinstance(r, BaseException))
        done += ok
        if ok < batch:
            errs = [r for r in results if isinstance(r, BaseException)]
            raise errs[0]
        remaining = count - done
        batch = min(2 * batch, remaining)
    return done


async def create_pods(client: KubeClient, recorder: EventRecorder, expectations: Expectations, owner: Obj,
                      key: str, n: int, *, template: Obj, extra_labels: dict[str, str] | None = None,
                      templates: Sequence[tuple[Obj, str]] | None = None) -> int:
    """Create ``n`` Pods of ``owner`` from ``template`` in slow-start batches (1, 2, 4, ...),
    named ``<owner>-<random>``, with ``n`` creations expected under ``key`` beforehand. A failed
    or never-attempted creation is no longer expected. Events as upstream: ``SuccessfulCreate``
    ("Created N pod(s)") or ``FailedCreate`` ("Error creating: ...").

    ``templates`` (Indexed Jobs): one ``(template, generateName)`` per Pod, in creation order,
    used instead of ``template`` and ``<owner>-``; ``n`` must be its length.

    Returns the number of Pods created (``n`` when nothing failed).

    Raises:
        ApiError: the first failed creation (after the FailedCreate event).

    Mirrors: kubernetes pkg/controller/replicaset manageReplicas and pkg/controller/job
    manageJob (the creation half of each).
    """
    md = owner["metadata"]
    ref = owner_reference(owner)
    if templates is not None and len(templates) != n:
        raise ValueError(f"create_pods: {len(templates)} templates for {n} pods")
    expectations.expect_creations(key, n)
    attempted = 0

    async def create() -> None:
        nonlocal attempted
        tpl, gen = templates[attempted] if templates is not None else (template, f"{md['name']}-")
        attempted += 1
        pod = pod_from_template(tpl, namespace=md.get("namespace", ""), generate_name=gen,
                                owner_ref=ref, extra_labels=extra_labels)
        try:
            await client.create(pod)
        except BaseException:
            expectations.creation_observed(key)
            raise

    try:
        created = await slow_start_batch(n, create)
    except ApiError as e:
        # the remaining (never attempted) creations are not expected either
        recorder.event(owner, "Warning", "FailedCreate", f"Error creating: {e.message or e}")
        for _ in range(n - attempted):
            expectations.creation_observed(key)
        raise
    if created:
        recorder.event(owner, "Normal", "SuccessfulCreate", f"Created {created} pod(s)")
    return created


class PodControl:
    """Observes owned Pods for a controller kind and keeps its expectations current."""

    def __init__(self, pods: Informer, owner_kind: str, expectations: Expectations) -> None:
        self.pods = pods
        self.owner_kind = owner_kind
        self.expectations = expectations
        pods.add_indexer(ORPHAN_INDEX, orphan_indexer)
        pods.add_event_handler(self._on_add, None, self._on_delete)

    def _owner_key(self, pod: Obj) -> str | None:
        for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == self.owner_kind:
                return f"{pod['metadata'].get('namespace', '')}/{ref.get('name', '')}"
        return None

    def _on_add(self, pod: Obj) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.creation_observed(key)

    def _on_delete(self, pod: Obj) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.deletion_observed(key, str(pod["metadata"].get("uid", "")))


class ReplicaSetReconciler:
    """Reconciler for apps/v1 ReplicaSets (see module docstring), and, with
    ``kind="ReplicationController"``, for core/v1 ReplicationControllers (the same controller
    upstream: pkg/controller/replication wraps the ReplicaSet one)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> ReplicaSetReconciler:
        """Build the controller from ``mgr``'s informers and register it (ReplicaSets, owned Pods)."""
        inf = mgr.informers
        rs = cls(mgr.client, replica_sets=inf.informer(REPLICA_SET), pods=inf.informer(POD), clock=mgr.clock,
                 recorder=mgr.event_recorder("replicaset-controller"))
        mgr.controller("replicaset").for_(REPLICA_SET).owns(POD).with_options(
            max_concurrent_reconciles=opts.workers).complete(rs)
        return rs

    def __init__(self, client: KubeClient, *, replica_sets: Informer, pods: Informer, clock: Clock,
                 recorder: EventRecorder, expectations: Expectations | None = None, kind: str = "ReplicaSet") -> None:
        self.client = client
        self.replica_sets = replica_sets
        self.pods = pods
        self.clock = clock
        self.recorder = recorder
        self.expectations = expectations or Expectations(clock)
        self.kind = kind
        self.pod_control = PodControl(pods, kind, self.expectations)
        replica_sets.add_indexer(ORPHAN_INDEX, orphan_indexer)

    # -- observe ------------------------------------------------------------------------------
    async def claim_pods(self, rs: Obj) -> list[Obj]:
        """Owned active-or-not Pods matching the selector, adopting orphans and releasing
        owned Pods that no longer match (ClaimPods)."""
        md = rs["metadata"]
        uid, ns = md["uid"], md.get("namespace", "")
        selector = self.selector(rs)
        owned = []
        for pod in self.pods.store.by_index(OWNER_UID_INDEX, uid):
            if selector.matches((pod.get("metadata") or {}).get("labels") or {}):
                owned.append(pod)
            elif not pod["metadata"].get("deletionTimestamp"):
                await self._release(pod, uid)
        if not md.get("deletionTimestamp"):
            for pod in self.pods.store.by_index(ORPHAN_INDEX, ns):
                if selector.matches((pod.get("metadata") or {}).get("labels") or {}):
                    adopted = await self._adopt(rs, pod)
                    if adopted is not None:
                        owned.append(adopted)
        return owned

    def selector(self, rs: Obj) -> LabelSelector:
        """The owner's selector; a ReplicationController's is a plain label map."""
        sel = (rs.get("spec") or {}).get("selector")
        if self.kind == "ReplicationController":
            return workload_selector({"matchLabels": sel} if sel else None)
        return workload_selector(sel)

    async def _adopt(self, rs: Obj, pod: Obj) -> Obj | None:
        refs = [*((pod["metadata"].get("ownerReferences")) or []), owner_reference(rs)]
        try:
            return await self.client.patch(POD, pod["metadata"]["name"], {
                "metadata": {"ownerReferences": refs, "uid": pod["metadata"]["uid"],
                             "resourceVersion": pod["metadata"].get("resourceVersion")}},
                pod["metadata"].get("namespace"))
        except ApiError as e:
            if is_not_found(e) or e.code == 409:
                return None
            raise

    async def _release(self, pod: Obj, owner_uid: str) -> None:
        refs = [r for r in pod["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
        try:
            await self.client.patch(POD, pod["metadata"]["name"], {
                "metadata": {"ownerReferences": refs or None, "uid": pod["metadata"]["uid"]}},
                pod["metadata"].get("namespace"))
        except ApiError as e:
            if not is_not_found(e):
                raise

    def related_pods(self, rs: Obj) -> list[Obj]:
        """Pods of every ReplicaSet sharing this one's controller (getIndirectlyRelatedPods)."""
        owner = controller_uid(rs)
        siblings = self.replica_sets.store.by_index(OWNER_UID_INDEX, owner) if owner else [rs]
        out: list[Obj] = []
        for s in siblings:
            out.extend(p for p in self.pods.store.by_index(OWNER_UID_INDEX, s["metadata"]["uid"]) if is_active(p))
        return out

    # -- converge -----------------------------------------------------------------------------
    async def manage_replicas(self, rs: Obj, active: list[Obj]) -> None:
        md = rs["metadata"]
        key = f"{md.get('namespace', '')}/{md['name']}"
        want = int((rs.get("spec") or {}).get("replicas", 1) if (rs.get("spec") or {}).get("replicas") is not None
                   else 1)
        diff = len(active) - want
        if diff < 0:
            n = min(-diff, BURST_REPLICAS)
            await create_pods(self.client, self.recorder, self.expectations, rs, key, n,
                              template=(rs.get("spec") or {}).get("template") or {})
        elif diff > 0:
            n = min(diff, BURST_REPLICAS)
            victims = deletion_order(active, self.related_pods(rs))[:n]
            self.expectations.expect_deletions(key, [p["metadata"]["uid"] for p in victims])

            async def delete(pod: Obj) -> None:
                pmd = pod["metadata"]
                try:
                    await self.client.delete(POD, pmd["name"], pmd.get("namespace"),
                                             preconditions={"uid": pmd["uid"]})
                except ApiError as e:
                    self.expectations.deletion_observed(key, pmd["uid"])
                    if not is_not_found(e) and e.code != 409:
                        raise

            results = await asyncio.gather(*(delete(p) for p in victims), return_exceptions=True)
            errs = [r for r in results if isinstance(r, BaseException)]
            if len(errs) < len(victims):
                self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted {len(victims) - len(errs)} pod(s)")
            if errs:
                raise errs[0]

    # -- status -------------------------------------------------------------------------------
    def calculate_status(self, rs: Obj, active: list[Obj]) -> tuple[Obj, float | None]:
        spec = rs.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self.clock.now()
        tmpl_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        status = dict(rs.get("status") or {})
        labeled = sum(1 for p in active
                      if all(((p.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in tmpl_labels.items()))
        status.update({
            "replicas": len(active),
            "fullyLabeledReplicas": labeled,
            "readyReplicas": sum(1 for p in active if meta.pod_is_ready(p)),
            "availableReplicas": sum(1 for p in active if is_available(p, min_ready, now)),
            "observedGeneration": int(rs["metadata"].get("generation") or 0),
        })
        waits = [w for w in (available_in(p, min_ready, now) for p in active) if w is not None]
        return status, (min(waits) if waits else None)

    async def reconcile(self, req: Request) -> Result:
        rs = self.replica_sets.store.get(req.namespace, req.name)
        key = f"{req.namespace}/{req.name}"
        if rs is None:
            self.expectations.delete(key)
            return Result()
        pods = await self.claim_pods(rs)
        active = [p for p in pods if is_active(p)]
        if self.expectations.satisfied(key) and not rs["metadata"].get("deletionTimestamp"):
            await self.manage_replicas(rs, active)
        status, wait = self.calculate_status(rs, active)
        if status != (rs.get("status") or {}):
            new = {**rs, "status": status}
            try:
                await self.client.update_status(new)
            except ApiError as e:
                if is_conflict(e):
                    return Result()  # a newer version is on its way through the informer
                raise
        return Result(requeue_after=wait) if wait else Result()


def setup_replication_controller(mgr: Manager, opts: KubeOptions) -> ReplicaSetReconciler:
    """The ReplicationController controller: the ReplicaSet one over core/v1 ReplicationControllers
    (pkg/controller/replication wraps pkg/controller/replicaset the same way)."""
    inf = mgr.informers
    rc = ReplicaSetReconciler(mgr.client, replica_sets=inf.informer(REPLICATION_CONTROLLER), pods=inf.informer(POD),
                              clock=mgr.clock, recorder=mgr.event_recorder("replication-controller"),
                              kind="ReplicationController")
    mgr.controller("replicationcontroller").for_(REPLICATION_CONTROLLER).owns(POD).with_options(
        max_concurrent_reconciles=opts.workers).complete(rc)
    return rc
