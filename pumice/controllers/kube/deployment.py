"""The Deployment controller: ReplicaSets per Pod template, rolled out RollingUpdate or Recreate.

One pass: claim the owned ReplicaSets, find the new one (template equal ignoring the
``pod-template-hash`` label) or create it as ``<name>-<hash>`` with the next revision, scale
according to the strategy, clean up old revisions beyond ``revisionHistoryLimit`` once complete,
then write status (replicas, updatedReplicas, readyReplicas, availableReplicas,
unavailableReplicas, observedGeneration, conditions Available and Progressing) once if changed.

RollingUpdate (maxSurge rounds up, maxUnavailable rounds down, both 0 -> maxUnavailable 1):
scale the new ReplicaSet up to ``replicas + maxSurge`` Pods in total; scale old ones down
(unhealthy replicas first, then oldest first) while ``available >= replicas - maxUnavailable``.
Recreate: old ReplicaSets to 0, wait until their Pods are gone, then the new one to ``replicas``.

Progressing reasons: NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated,
NewReplicaSetAvailable, ProgressDeadlineExceeded; Available: MinimumReplicasAvailable /
MinimumReplicasUnavailable. These are what ``kubectl rollout status`` reads.

Mirrors: kubernetes pkg/controller/deployment/{deployment_controller.go, sync.go, rolling.go,
recreate.go, progress.go, util/deployment_util.go}. A change of ``replicas`` (a scaling event: an active
ReplicaSet's desired-replicas annotation differs) is spread proportionally over the active
ReplicaSets first, as upstream's ``scale``. Deviates: paused Deployments only get status (and
scaling); no rollback (``spec.rollbackTo`` is gone upstream too).
"""

from __future__ import annotations

import copy
import logging
import math
from typing import TYPE_CHECKING

from pumice._util.clock import Clock, parse_rfc3339, rfc3339
from pumice.api import Obj, meta
from pumice.api.apply import LAST_APPLIED_CONFIG_ANNOTATION
from pumice.api.intstr import scaled_value
from pumice.api.meta import owner_reference
from pumice.api.scheme import DEPLOYMENT, POD, REPLICA_SET
from pumice.client.base import ApiError, KubeClient, is_already_exists, is_conflict, is_not_found
from pumice.client.informer import OWNER_UID_INDEX, Informer
from pumice.controllers.kube.podutil import compute_hash, is_terminal
from pumice.controllers.kube.replicaset import ORPHAN_INDEX, orphan_indexer, workload_selector
from pumice.runtime import Request, Result, TerminalError
from pumice.runtime.events import EventRecorder
from pumice.runtime.manager import Manager
from pumice.runtime.predicates import FuncPredicate

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions


log = logging.getLogger(__name__)

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
_SKIP_ANNOTATIONS = {REVISION, DESIRED_REPLICAS, MAX_REPLICAS, REVISION_HISTORY,
                     LAST_APPLIED_CONFIG_ANNOTATION}

# condition reasons (pkg/controller/deployment/util)
NEW_RS_REASON = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
RS_UPDATED_REASON = "ReplicaSetUpdated"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"


def replicas_of(obj: Obj) -> int:
    r = (obj.get("spec") or {}).get("replicas")
    return 1 if r is None else int(r)


def revision(rs: Obj) -> int:
    try:
        return int(((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def resolve_fenceposts(d: Obj) -> tuple[int, int]:
    """``(maxSurge, maxUnavailable)`` in Pods; Recreate gives (0, 0).

    Raises:
        TerminalError: a value that is neither an integer nor a percentage.
    """
    strategy = (d.get("spec") or {}).get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0, 0
    ru = strategy.get("rollingUpdate") or {}
    want = replicas_of(d)
    try:
        surge = scaled_value(ru.get("maxSurge"), want, round_up=True, default="25%")
        unavailable = scaled_value(ru.get("maxUnavailable"), want, round_up=False, default="25%")
    except ValueError as e:
        raise TerminalError(str(e)) from e
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_unavailable(d: Obj) -> int:
    """MaxUnavailable: capped at replicas; 0 for Recreate and for 0 replicas."""
    if replicas_of(d) == 0:
        return 0
    _, u = resolve_fenceposts(d)
    return min(u, replicas_of(d))


def template_without_hash(template: Obj) -> Obj:
    t = copy.deepcopy(template or {})
    labels = (t.get("metadata") or {}).get("labels")
    if labels and POD_TEMPLATE_HASH in labels:
        labels.pop(POD_TEMPLATE_HASH)
    return t


def equal_ignore_hash(a: Obj, b: Obj) -> bool:
    return template_without_hash(a) == template_without_hash(b)


def new_rs_replicas(d: Obj, all_rss: list[Obj], new_rs: Obj) -> int:
    """NewRSNewReplicas: how far the new ReplicaSet may grow now."""
    strategy = ((d.get("spec") or {}).get("strategy") or {}).get("type") or "RollingUpdate"
    if strategy == "Recreate":
        return replicas_of(d)
    surge, _ = resolve_fenceposts(d)
    current = sum(replicas_of(rs) for rs in all_rss)
    max_total = replicas_of(d) + surge
    if current >= max_total:
        return replicas_of(new_rs)
    return replicas_of(new_rs) + max(0, min(max_total - current, replicas_of(d) - replicas_of(new_rs)))


def is_scaling_event(d: Obj, rss: list[Obj]) -> bool:
    """An active ReplicaSet was sized for another ``replicas`` (isScalingEvent)."""
    want = str(replicas_of(d))
    for rs in rss:
        if replicas_of(rs) > 0:
            desired = ((rs.get("metadata") or {}).get("annotations") or {}).get(DESIRED_REPLICAS)
            if desired is not None and desired != want:
                return True
    return False


def _created(rs: Obj) -> tuple[str, str]:
    return (rs["metadata"].get("creationTimestamp", ""), rs["metadata"]["name"])


def proportional_sizes(d: Obj, new: Obj | None, old: list[Obj]) -> dict[str, int]:
    """Target ``spec.replicas`` per ReplicaSet name for a scaling event (pure; only changes).

    Mirrors: pkg/controller/deployment/sync.go scale (FindActiveOrLatest, IsSaturated, the
    proportional split with getProportion/getReplicaSetFraction and the leftover to the largest).
    """
    want = replicas_of(d)
    rss = [*old, *([new] if new else [])]
    active = [rs for rs in rss if replicas_of(rs) > 0]
    if not rss:
        return {}
    if len(active) <= 1:
        target = active[0] if active else (new or max(old, key=_created))
        return {target["metadata"]["name"]: want} if replicas_of(target) != want else {}
    if new is not None and replicas_of(new) == want and int((new.get("status") or {}).get("availableReplicas") or 0) == want:
        return {rs["metadata"]["name"]: 0 for rs in old if replicas_of(rs)}
    strategy = ((d.get("spec") or {}).get("strategy") or {}).get("type") or "RollingUpdate"
    if strategy != "RollingUpdate":
        return {}
    surge, _ = resolve_fenceposts(d)
    allowed = want + surge if want > 0 else 0
    to_add = allowed - sum(replicas_of(rs) for rs in active)
    if to_add == 0:
        return {}
    # bigger first; among equals newer first when growing, older first when shrinking
    by_age = sorted(active, key=_created, reverse=to_add > 0)
    ordered = sorted(by_age, key=lambda rs: -replicas_of(rs))
    sizes: dict[str, int] = {}
    added = 0
    for rs in ordered:
        if want == 0:
            fraction = -replicas_of(rs)
        else:
            ann = ((rs.get("metadata") or {}).get("annotations") or {}).get(MAX_REPLICAS)
            annotated = int(ann) if ann and ann.isdigit() else int((d.get("status") or {}).get("replicas") or 0)
            annotated = annotated or 1
            fraction = math.floor(replicas_of(rs) * (want + surge) / annotated + 0.5) - replicas_of(rs)
        room = to_add - added
        step = min(fraction, room) if to_add > 0 else max(fraction, room)
        sizes[rs["metadata"]["name"]] = replicas_of(rs) + step
        added += step
    if added != to_add and ordered:
        first = ordered[0]["metadata"]["name"]
        sizes[first] = max(0, sizes[first] + to_add - added)
    return {k: v for k, v in sizes.items() if v != replicas_of(next(r for r in rss if r["metadata"]["name"] == k))}


def build_new_replica_set(d: Obj, hash_: str, rev: int, replicas: int) -> Obj:
    """The new ReplicaSet of a Deployment (pure)."""
    md, spec = d["metadata"], d.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    tmd = template.setdefault("metadata", {})
    tmd["labels"] = {**(tmd.get("labels") or {}), POD_TEMPLATE_HASH: hash_}
    selector = copy.deepcopy(spec.get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), POD_TEMPLATE_HASH: hash_}
    surge, _ = resolve_fenceposts(d)
    annotations = {k: v for k, v in (md.get("annotations") or {}).items() if k not in _SKIP_ANNOTATIONS}
    annotations.update({REVISION: str(rev), DESIRED_REPLICAS: str(replicas_of(d)),
                        MAX_REPLICAS: str(replicas_of(d) + surge)})
    rs_spec: Obj = {"replicas": replicas, "selector": selector, "template": template}
    if spec.get("minReadySeconds"):
        rs_spec["minReadySeconds"] = spec["minReadySeconds"]
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": f"{md['name']}-{hash_}", "namespace": md.get("namespace", ""),
                     "labels": dict(tmd["labels"]), "annotations": annotations,
                     "ownerReferences": [owner_reference(d)]},
        "spec": rs_spec,
    }


class DeploymentReconciler:
    """Reconciler for apps/v1 Deployments (see module docstring)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> DeploymentReconciler:
        """Build the controller and register it: Deployments, owned ReplicaSets, and deleted Pods
        (mapped through their ReplicaSet to its Deployment, for Recreate)."""
        inf = mgr.informers
        replica_sets = inf.informer(REPLICA_SET)

        def deployment_of_pod(pod: Obj) -> list[Request]:
            md = pod.get("metadata") or {}
            for ref in md.get("ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") == "ReplicaSet":
                    owner = replica_sets.store.get(md.get("namespace"), str(ref.get("name")))
                    for oref in ((owner or {}).get("metadata") or {}).get("ownerReferences") or []:
                        if oref.get("controller") and oref.get("kind") == "Deployment":
                            return [Request(md.get("namespace") or "", str(oref.get("name")))]
            return []

        dep = cls(mgr.client, deployments=inf.informer(DEPLOYMENT), replica_sets=replica_sets,
                  pods=inf.informer(POD), clock=mgr.clock, recorder=mgr.event_recorder("deployment-controller"))
        mgr.controller("deployment").for_(DEPLOYMENT).owns(REPLICA_SET).watches(
            POD, deployment_of_pod, predicates=FuncPredicate(create=lambda _o: False, update=lambda _o, _n: False)
        ).with_options(max_concurrent_reconciles=opts.workers).complete(dep)
        return dep

    def __init__(self, client: KubeClient, *, deployments: Informer, replica_sets: Informer, pods: Informer,
                 clock: Clock, recorder: EventRecorder) -> None:
        self.client = client
        self.deployments = deployments
        self.replica_sets = replica_sets
        self.pods = pods
        self.clock = clock
        self.recorder = recorder
        replica_sets.add_indexer(ORPHAN_INDEX, orphan_indexer)

    # -- observe ------------------------------------------------------------------------------
    async def claim_replica_sets(self, d: Obj) -> list[Obj]:
        md = d["metadata"]
        selector = workload_selector((d.get("spec") or {}).get("selector"))
        owned = [rs for rs in self.replica_sets.store.by_index(OWNER_UID_INDEX, md["uid"])
                 if selector.matches((rs.get("metadata") or {}).get("labels") or {})]
        if md.get("deletionTimestamp"):
            return owned
        for rs in self.replica_sets.store.by_index(ORPHAN_INDEX, md.get("namespace", "")):
            if not selector.matches((rs.get("metadata") or {}).get("labels") or {}):
                continue
            refs = [*(rs["metadata"].get("ownerReferences") or []), owner_reference(d)]
            try:
                owned.append(await self.client.patch(REPLICA_SET, rs["metadata"]["name"], {"metadata": {
                    "ownerReferences": refs, "uid": rs["metadata"]["uid"],
                    "resourceVersion": rs["metadata"].get("resourceVersion")}}, md.get("namespace")))
            except ApiError as e:
                if not (is_not_found(e) or e.code == 409):
                    raise
        return owned

    def split(self, d: Obj, rss: list[Obj]) -> tuple[Obj | None, list[Obj]]:
        template = (d.get("spec") or {}).get("template") or {}
        ordered = sorted(rss, key=lambda rs: (rs["metadata"].get("creationTimestamp", ""), rs["metadata"]["name"]))
        new = next((rs for rs in ordered if equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template)),
                   None)
        return new, [rs for rs in ordered if rs is not new]

    def old_pods_running(self, old: list[Obj]) -> bool:
        for rs in old:
            for p in self.pods.store.by_index(OWNER_UID_INDEX, rs["metadata"]["uid"]):
                if not is_terminal(p):
                    return True
        return False

    # -- writes -------------------------------------------------------------------------------
    async def scale(self, rs: Obj, n: int, d: Obj) -> tuple[bool, Obj]:
        surge, _ = resolve_fenceposts(d)
        ann = (rs["metadata"].get("annotations") or {})
        want_ann = {DESIRED_REPLICAS: str(replicas_of(d)), MAX_REPLICAS: str(replicas_of(d) + surge)}
        if replicas_of(rs) == n and all(ann.get(k) == v for k, v in want_ann.items()):
            return False, rs
        out = await self.client.patch(REPLICA_SET, rs["metadata"]["name"], {
            "metadata": {"annotations": want_ann, "resourceVersion": rs["metadata"].get("resourceVersion")},
            "spec": {"replicas": n}}, rs["metadata"].get("namespace"))
        if replicas_of(rs) != n:
            verb = "up" if n > replicas_of(rs) else "down"
            self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                f"Scaled {verb} replica set {rs['metadata']['name']} from {replicas_of(rs)} to {n}")
        return replicas_of(rs) != n, out

    async def get_new_rs(self, d: Obj, new: Obj | None, old: list[Obj], create: bool) -> tuple[Obj | None, bool]:
        """The new ReplicaSet with its revision brought up to date, created when missing and
        ``create``. Returns (rs or None, created)."""
        max_old = max((revision(rs) for rs in old), default=0)
        new_rev = max_old + 1
        md = d["metadata"]
        if new is not None:
            if revision(new) < new_rev:
                new = await self.client.patch(REPLICA_SET, new["metadata"]["name"], {
                    "metadata": {"annotations": {REVISION: str(new_rev)}}}, md.get("namespace"))
            await self._set_deployment_revision(d, revision(new))
            return new, False
        if not create:
            return None, False
        collision = int((d.get("status") or {}).get("collisionCount") or 0)
        hash_ = compute_hash((d.get("spec") or {}).get("template") or {}, collision)
        replicas = new_rs_replicas(d, old, {"spec": {"replicas": 0}})
        rs = build_new_replica_set(d, hash_, new_rev, replicas)
        try:
            created = await self.client.create(rs)
        except ApiError as e:
            if not is_already_exists(e):
                raise
            live = await self.client.get(REPLICA_SET, rs["metadata"]["name"], md.get("namespace"))
            same_owner = (live["metadata"].get("ownerReferences") or [{}])[0].get("uid") == md["uid"]
            if same_owner and equal_ignore_hash((live.get("spec") or {}).get("template") or {},
                                                (d.get("spec") or {}).get("template") or {}):
                return live, False
            status = copy.deepcopy(d.get("status") or {})
            status["collisionCount"] = collision + 1
            await self.client.update_status({**copy.deepcopy(d), "status": status})
            raise RuntimeError(f"hash collision for replica set {rs['metadata']['name']}; retrying") from e
        self.recorder.event(d, "Normal", "ScalingReplicaSet",
                            f"Scaled up replica set {created['metadata']['name']} from 0 to {replicas}")
        await self._set_deployment_revision(d, new_rev)
        return created, True

    async def _set_deployment_revision(self, d: Obj, rev: int) -> None:
        if ((d["metadata"].get("annotations") or {}).get(REVISION)) == str(rev):
            return
        await self.client.patch(DEPLOYMENT, d["metadata"]["name"],
                                {"metadata": {"annotations": {REVISION: str(rev)}}}, d["metadata"].get("namespace"))

    # -- strategies ---------------------------------------------------------------------------
    async def rolling(self, d: Obj, new: Obj | None, old: list[Obj]) -> tuple[Obj | None, bool]:
        new, created = await self.get_new_rs(d, new, old, create=True)
        assert new is not None
        all_rss = [*old, new]
        if created:
            return new, True
        # reconcileNewReplicaSet
        want = replicas_of(d)
        if replicas_of(new) > want:
            changed, new = await self.scale(new, want, d)
            if changed:
                return new, True
        elif replicas_of(new) < want:
            n = new_rs_replicas(d, all_rss, new)
            changed, new = await self.scale(new, n, d)
            if changed:
                return new, True
        # reconcileOldReplicaSets
        if sum(replicas_of(rs) for rs in old) == 0:
            return new, False
        all_pods = sum(replicas_of(rs) for rs in all_rss)
        min_available = want - max_unavailable(d)
        new_unavailable = replicas_of(new) - int((new.get("status") or {}).get("availableReplicas") or 0)
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return new, False
        scaled = 0
        # cleanupUnhealthyReplicas: oldest first, drop replicas that are not available
        for i, rs in enumerate(old):
            if scaled >= max_scaled_down:
                break
            unhealthy = replicas_of(rs) - int((rs.get("status") or {}).get("availableReplicas") or 0)
            if replicas_of(rs) == 0 or unhealthy <= 0:
                continue
            cut = min(unhealthy, max_scaled_down - scaled)
            _, old[i] = await self.scale(rs, replicas_of(rs) - cut, d)
            scaled += cut
        # scaleDownOldReplicaSetsForRollingUpdate
        available = sum(int((rs.get("status") or {}).get("availableReplicas") or 0) for rs in [*old, new])
        if available > min_available:
            budget = min(available - min_available, max_scaled_down - scaled)
            for i, rs in enumerate(old):
                if budget <= 0:
                    break
                if replicas_of(rs) == 0:
                    continue
                cut = min(replicas_of(rs), budget)
                _, old[i] = await self.scale(rs, replicas_of(rs) - cut, d)
                budget -= cut
                scaled += cut
        return new, scaled > 0

    async def recreate(self, d: Obj, new: Obj | None, old: list[Obj]) -> tuple[Obj | None, bool]:
        scaled = False
        for i, rs in enumerate(old):
            if replicas_of(rs):
                _, old[i] = await self.scale(rs, 0, d)
                scaled = True
        if scaled or self.old_pods_running(old):
            new, _ = await self.get_new_rs(d, new, old, create=False)
            return new, True
        new, created = await self.get_new_rs(d, new, old, create=True)
        assert new is not None
        if replicas_of(new) != replicas_of(d):
            _, new = await self.scale(new, replicas_of(d), d)
            return new, True
        return new, created

    async def cleanup(self, d: Obj, old: list[Obj]) -> None:
        limit = (d.get("spec") or {}).get("revisionHistoryLimit")
        limit = 10 if limit is None else int(limit)
        candidates = [rs for rs in old if replicas_of(rs) == 0 and not (rs.get("status") or {}).get("replicas")
                      and not rs["metadata"].get("deletionTimestamp")]
        extra = len(candidates) - limit
        if extra <= 0:
            return
        for rs in sorted(candidates, key=lambda r: (revision(r), r["metadata"].get("creationTimestamp", "")))[:extra]:
            try:
                await self.client.delete(REPLICA_SET, rs["metadata"]["name"], rs["metadata"].get("namespace"),
                                         preconditions={"uid": rs["metadata"]["uid"]})
            except ApiError as e:
                if not is_not_found(e):
                    raise

    # -- status -------------------------------------------------------------------------------
    def calculate_status(self, d: Obj, new: Obj | None, old: list[Obj], created: bool) -> tuple[Obj, float | None]:
        all_rss = [*old, *([new] if new else [])]
        prev = d.get("status") or {}

        def s(rs: Obj, f: str) -> int:
            return int((rs.get("status") or {}).get(f) or 0)

        want = replicas_of(d)
        available = sum(s(rs, "availableReplicas") for rs in all_rss)
        status: Obj = {
            "observedGeneration": int(d["metadata"].get("generation") or 0),
            "replicas": sum(s(rs, "replicas") for rs in all_rss),
            "updatedReplicas": s(new, "replicas") if new else 0,
            "readyReplicas": sum(s(rs, "readyReplicas") for rs in all_rss),
            "availableReplicas": available,
            "unavailableReplicas": max(0, sum(replicas_of(rs) for rs in all_rss) - available),
        }
        if prev.get("collisionCount") is not None:
            status["collisionCount"] = prev["collisionCount"]
        now_ts = self.clock.now()
        now = rfc3339(now_ts)
        conds: list[Obj] = list(prev.get("conditions") or [])
        if available >= want - max_unavailable(d):
            conds = meta.with_condition(conds, {"type": "Available", "status": "True", "reason": MIN_AVAILABLE,
                                                 "message": "Deployment has minimum availability."},
                                         now, update_time=True)
        else:
            conds = meta.with_condition(conds, {"type": "Available", "status": "False", "reason": MIN_UNAVAILABLE,
                                                 "message": "Deployment does not have minimum availability."},
                                         now, update_time=True)
        wait: float | None = None
        deadline = (d.get("spec") or {}).get("progressDeadlineSeconds")
        deadline = 600 if deadline is None else int(deadline)
        if not (d.get("spec") or {}).get("paused") and new is not None:
            name = new["metadata"]["name"]
            cur = next((c for c in conds if c.get("type") == "Progressing"), None)
            complete = (status["updatedReplicas"] == want and status["replicas"] == want
                        and available == want and status["observedGeneration"] >= int(d["metadata"].get("generation") or 0))
            progressing = (status["updatedReplicas"] > int(prev.get("updatedReplicas") or 0)
                           or (status["replicas"] - status["updatedReplicas"])
                           < (int(prev.get("replicas") or 0) - int(prev.get("updatedReplicas") or 0))
                           or status["readyReplicas"] > int(prev.get("readyReplicas") or 0)
                           or available > int(prev.get("availableReplicas") or 0))
            cond: Obj | None = None
            if created:
                cond = {"type": "Progressing", "status": "True", "reason": NEW_RS_REASON,
                        "message": f'Created new replica set "{name}"'}
            elif complete:
                cond = {"type": "Progressing", "status": "True", "reason": NEW_RS_AVAILABLE_REASON,
                        "message": f'ReplicaSet "{name}" has successfully progressed.'}
            elif progressing:
                cond = {"type": "Progressing", "status": "True", "reason": RS_UPDATED_REASON,
                        "message": f'ReplicaSet "{name}" is progressing.'}
            elif cur is None:
                cond = {"type": "Progressing", "status": "True", "reason": FOUND_NEW_RS_REASON,
                        "message": f'Found new replica set "{name}"'}
            elif cur.get("reason") != NEW_RS_AVAILABLE_REASON and cur.get("lastUpdateTime"):
                left = parse_rfc3339(str(cur["lastUpdateTime"])) + deadline - now_ts
                if cur.get("reason") == TIMED_OUT_REASON or left <= 0:
                    cond = {"type": "Progressing", "status": "False", "reason": TIMED_OUT_REASON,
                            "message": f'ReplicaSet "{name}" has timed out progressing.'}
                else:
                    wait = left
            if cond is not None:
                if cond["reason"] in (RS_UPDATED_REASON, NEW_RS_REASON) or cur is None or cur.get("reason") != cond["reason"]:
                    conds = [c for c in conds if c.get("type") != "Progressing"] + [
                        self._progressing(cur, cond, now)]
                if not complete and cond["status"] == "True":
                    wait = float(deadline)
        status["conditions"] = conds
        return status, wait

    @staticmethod
    def _progressing(cur: Obj | None, cond: Obj, now: str) -> Obj:
        flipped = cur is None or cur.get("status") != cond["status"]
        return {"type": "Progressing", "status": cond["status"], "lastUpdateTime": now,
                "lastTransitionTime": now if flipped else cur.get("lastTransitionTime", now),  # type: ignore[union-attr]
                "reason": cond["reason"], "message": cond["message"]}

    async def reconcile(self, req: Request) -> Result:
        d = self.deployments.store.get(req.namespace, req.name)
        if d is None:
            return Result()
        selector = (d.get("spec") or {}).get("selector") or {}
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            self.recorder.event(d, "Warning", "SelectingAll",
                                "This deployment is selecting all pods. A non-empty selector is required.")
            return Result()
        rss = await self.claim_replica_sets(d)
        new, old = self.split(d, rss)
        created = False
        scaled = False
        if not d["metadata"].get("deletionTimestamp") and is_scaling_event(d, rss):
            sizes = proportional_sizes(d, new, old)
            for i, rs in enumerate(old):
                if rs["metadata"]["name"] in sizes:
                    scaled, old[i] = True, (await self.scale(rs, sizes[rs["metadata"]["name"]], d))[1]
            if new is not None and new["metadata"]["name"] in sizes:
                scaled, new = True, (await self.scale(new, sizes[new["metadata"]["name"]], d))[1]
        if not scaled and not d["metadata"].get("deletionTimestamp") and not (d.get("spec") or {}).get("paused"):
            strategy = ((d.get("spec") or {}).get("strategy") or {}).get("type") or "RollingUpdate"
            was_new = new is None
            if strategy == "Recreate":
                new, _ = await self.recreate(d, new, old)
            else:
                new, _ = await self.rolling(d, new, old)
            created = was_new and new is not None
            if new is not None and not created:
                st = self._complete_now(d, new, old)
                if st:
                    await self.cleanup(d, old)
        status, wait = self.calculate_status(d, new, old, created)
        if self._material(status) != self._material(d.get("status") or {}):
            fresh = self.deployments.store.get(req.namespace, req.name) or d
            try:
                await self.client.update_status({**copy.deepcopy(fresh), "status": status})
            except ApiError as e:
                if is_conflict(e):
                    return Result()  # a newer version is on its way through the informer
                raise
        return Result(requeue_after=wait) if wait else Result()

    @staticmethod
    def _material(status: Obj) -> Obj:
        """Status without timestamps that move on their own."""
        out = dict(status)
        out["conditions"] = sorted(
            ({k: v for k, v in c.items() if k != "lastUpdateTime"} for c in status.get("conditions") or []),
            key=lambda c: str(c.get("type")))
        return out

    def _complete_now(self, d: Obj, new: Obj, old: list[Obj]) -> bool:
        want = replicas_of(d)
        st = new.get("status") or {}
        return (replicas_of(new) == want and int(st.get("availableReplicas") or 0) == want
                and all(replicas_of(rs) == 0 for rs in old))
