"""The DaemonSet controller: one Pod of the template on every Node that can run it.

A Node is eligible when it is not marked unschedulable, matches the template's ``nodeSelector``,
and every ``NoSchedule``/``NoExecute`` taint is tolerated (the Pods also tolerate the taints
upstream adds for DaemonSet Pods: not-ready, unreachable, disk/memory/pid-pressure,
unschedulable). Missing Pods are created bound to their Node; Pods on Nodes that stopped being
eligible, extra Pods on one Node and failed Pods are deleted. A RollingUpdate replaces Pods of an
older template (``controller-revision-hash``) up to ``maxUnavailable`` at a time.

Status: desiredNumberScheduled, currentNumberScheduled, numberMisscheduled, numberReady,
numberAvailable, numberUnavailable, updatedNumberScheduled, observedGeneration.

Mirrors: kubernetes pkg/controller/daemon (daemon_controller.go manage/podsShouldBeOnNode,
util/daemonset_util.go AddOrUpdateDaemonPodTolerations, update.go rollingUpdate).
Deviates: Pods are bound to their Node by the controller (``spec.nodeName``) instead of through
node affinity and the scheduler (DaemonSets before 1.12 did the same); no ControllerRevisions.
"""

from __future__ import annotations

import copy
import logging

from pumice.api import Obj, meta
from pumice.api.apps import DAEMONSET_TEMPLATE_GENERATION_LABEL, TEMPLATE_GENERATION
from pumice.api.intstr import scaled_value
from pumice.api.meta import owner_reference
from pumice.api.scheme import DAEMON_SET, NODE, POD
from pumice.api.selectors import from_label_selector
from pumice.client.base import ApiError, KubeClient
from pumice.client.informer import OWNER_UID_INDEX, Informer
from pumice.controllers.kube.options import KubeOptions
from pumice.controllers.kube.podutil import (
    compute_hash,
    delete_exactly,
    is_terminal,
)
from pumice.runtime import Request, Result
from pumice.runtime.events import EventRecorder
from pumice.runtime.manager import Manager

log = logging.getLogger(__name__)

REVISION_LABEL = "controller-revision-hash"
DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def _tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t.get("key") == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def daemon_pod_tolerations(template_spec: Obj) -> list[Obj]:
    """The template's tolerations plus those upstream adds to every DaemonSet Pod."""
    own = list(template_spec.get("tolerations") or [])
    return own + [t for t in DAEMON_TOLERATIONS if t not in own]


def should_run_on(ds: Obj, node: Obj) -> bool:
    """Whether ``ds`` wants a Pod on ``node`` (unschedulable is tolerated, as upstream)."""
    tspec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    if not from_label_selector({"matchLabels": tspec.get("nodeSelector") or {}}).matches(labels):
        return False
    tolerations = daemon_pod_tolerations(tspec)
    return all(_tolerates(tolerations, t) for t in (node.get("spec") or {}).get("taints") or []
               if t.get("effect") in ("NoSchedule", "NoExecute"))


def revision(ds: Obj) -> str:
    return compute_hash((ds.get("spec") or {}).get("template") or {})


def template_generation(ds: Obj) -> str | None:
    """The DaemonSet's template generation (its ``deprecated.daemonset.template.generation``
    annotation, which the API server keeps), or None when it has none or it is not an integer.

    Mirrors: kubernetes pkg/controller/daemon/util (GetTemplateGeneration; upstream fails the
    sync on a bad value, which the API server refuses to store anyway)."""
    value = ((ds.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION)
    if value is None:
        return None
    try:
        return str(int(str(value)))
    except ValueError:
        log.warning("DaemonSet %s/%s: annotation %s=%r is not an integer; its Pods get no %s label",
                    ds["metadata"].get("namespace"), ds["metadata"].get("name"), TEMPLATE_GENERATION, value,
                    DAEMONSET_TEMPLATE_GENERATION_LABEL)
        return None


def desired_pod(ds: Obj, node: str) -> Obj:
    """The daemon Pod for ``node`` (pure): the template's labels plus ``pod-template-generation``
    (when the DaemonSet has a template generation) and ``controller-revision-hash``
    (util.CreatePodTemplate)."""
    tpl = (ds.get("spec") or {}).get("template") or {}
    md = tpl.get("metadata") or {}
    spec = copy.deepcopy(tpl.get("spec") or {})
    spec["nodeName"] = node
    spec["tolerations"] = daemon_pod_tolerations(spec)
    labels = dict(md.get("labels") or {})
    generation = template_generation(ds)
    if generation is not None:
        labels[DAEMONSET_TEMPLATE_GENERATION_LABEL] = generation
    labels[REVISION_LABEL] = revision(ds)
    pmeta: Obj = {"generateName": f"{ds['metadata']['name']}-", "namespace": ds["metadata"].get("namespace"),
                  "labels": labels, "ownerReferences": [owner_reference(ds)]}
    if md.get("annotations"):
        pmeta["annotations"] = dict(md["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pmeta, "spec": spec}


class DaemonSetReconciler:
    """Reconciler for apps/v1 DaemonSets (see the module docstring)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> DaemonSetReconciler:
        """Build the controller and register it (DaemonSets, owned Pods, Nodes)."""
        inf = mgr.informers
        ds = cls(mgr.client, sets=inf.informer(DAEMON_SET), pods=inf.informer(POD), nodes=inf.informer(NODE),
                 recorder=mgr.event_recorder("daemonset-controller"))
        mgr.controller("daemonset").for_(DAEMON_SET).owns(POD).watches(
            NODE, lambda _n: ds.for_node()).with_options(max_concurrent_reconciles=opts.workers).complete(ds)
        return ds

    def __init__(self, client: KubeClient, *, sets: Informer, pods: Informer, nodes: Informer,
                 recorder: EventRecorder) -> None:
        self.client = client
        self.sets = sets
        self.pods = pods
        self.nodes = nodes
        self.recorder = recorder

    def for_node(self) -> list[Request]:
        """Every DaemonSet (a Node change may change where they run)."""
        return [Request.for_object(ds) for ds in self.sets.store.list()]

    async def reconcile(self, req: Request) -> Result:
        ds = self.sets.store.get(req.namespace, req.name)
        if ds is None or ds["metadata"].get("deletionTimestamp"):
            return Result()
        pods = [p for p in self.pods.store.by_index(OWNER_UID_INDEX, ds["metadata"]["uid"])
                if not p["metadata"].get("deletionTimestamp")]
        by_node: dict[str, list[Obj]] = {}
        for p in pods:
            by_node.setdefault((p.get("spec") or {}).get("nodeName") or "", []).append(p)
        nodes = {n["metadata"]["name"]: n for n in self.nodes.store.list()}
        wanted = sorted(name for name, n in nodes.items() if should_run_on(ds, n))
        rev = revision(ds)
        for name in wanted:
            mine = by_node.get(name, [])
            for p in mine:
                if is_terminal(p):
                    await self._delete(ds, p)
            alive = [p for p in mine if not is_terminal(p)]
            if not alive:
                await self._create(ds, name)
            for p in sorted(alive, key=lambda p: p["metadata"].get("creationTimestamp") or "")[1:]:
                await self._delete(ds, p)
        for name, mine in by_node.items():
            if name not in wanted:
                for p in mine:
                    await self._delete(ds, p)
        await self._rolling_update(ds, by_node, wanted, rev)
        await self._status(ds, by_node, wanted, nodes, rev)
        return Result()

    async def _rolling_update(self, ds: Obj, by_node: dict[str, list[Obj]], wanted: list[str], rev: str) -> None:
        us = (ds.get("spec") or {}).get("updateStrategy") or {}
        if (us.get("type") or "RollingUpdate") != "RollingUpdate":
            return
        max_unavailable = scaled_value((us.get("rollingUpdate") or {}).get("maxUnavailable", 1), len(wanted),
                                       round_up=True, default=1) or 1
        unavailable = sum(1 for n in wanted if not any(meta.pod_is_ready(p) for p in by_node.get(n, [])))
        old = [p for n in wanted for p in by_node.get(n, [])
               if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) != rev]
        old.sort(key=lambda p: (meta.pod_is_ready(p), p["metadata"]["name"]))
        for p in old:
            if unavailable >= max_unavailable and meta.pod_is_ready(p):
                break
            await self._delete(ds, p)
            if meta.pod_is_ready(p):
                unavailable += 1

    async def _create(self, ds: Obj, node: str) -> None:
        try:
            pod = await self.client.create(desired_pod(ds, node))
        except ApiError as e:
            self.recorder.event(ds, "Warning", "FailedCreate", f"Error creating: {e.message or e}")
            raise
        self.recorder.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")

    async def _delete(self, ds: Obj, pod: Obj) -> None:
        if await delete_exactly(self.client, pod):
            self.recorder.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")

    async def _status(self, ds: Obj, by_node: dict[str, list[Obj]], wanted: list[str], nodes: dict[str, Obj],
                      rev: str) -> None:
        scheduled = [n for n in wanted if any(not is_terminal(p) for p in by_node.get(n, []))]
        mis = [n for n in by_node if n not in wanted and by_node[n]]
        ready = [n for n in wanted if any(meta.pod_is_ready(p) for p in by_node.get(n, []))]
        updated = [n for n in wanted if any((p["metadata"].get("labels") or {}).get(REVISION_LABEL) == rev
                                            for p in by_node.get(n, []))]
        status = dict(ds.get("status") or {})
        status.update({
            "currentNumberScheduled": len(scheduled), "numberMisscheduled": len(mis),
            "desiredNumberScheduled": len(wanted), "numberReady": len(ready), "numberAvailable": len(ready),
            "updatedNumberScheduled": len(updated),
            "observedGeneration": int(ds["metadata"].get("generation") or 0),
        })
        if len(wanted) - len(ready):
            status["numberUnavailable"] = len(wanted) - len(ready)
        else:
            status.pop("numberUnavailable", None)
        if status != (ds.get("status") or {}):
            await self.client.update_status({**ds, "status": status})
