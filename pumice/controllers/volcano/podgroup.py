"""PodGroup controller: gives Volcano-scheduled Pods that have no PodGroup one of their own.

For a Pod whose ``schedulerName`` is a Volcano scheduler and that carries no
``scheduling.k8s.io/group-name`` annotation, the PodGroup ``podgroup-<controller owner uid, or
the Pod's uid>`` is created (owned by the Pod's owners, or the Pod itself), with ``minMember`` 1
(or the owner's ``scheduling.volcano.sh/group-min-member`` annotation), ``minResources`` = the
Pod's requests x minMember, the queue from the Pod annotation ``scheduling.volcano.sh/queue-name``,
the Pod's priorityClassName, and the preemptable / cooldown / revocable-zone / JDB annotations.
The Pod is then annotated with the group name. A ReplicaSet scaled to zero loses its PodGroup.

A create the API refuses (the podgroup webhook's ``unable to find queue`` for a queue that does not
exist) is retried with backoff, as upstream, and also recorded as a Warning Event on the Pod,
reason ``PodGroupError``, message ``Failed to create PodGroup, err: <the refusal>``: the reason and
text upstream's vcjob controller gives a failed PodGroup create; one Event per distinct refusal,
not one per retry.

Mirrors: volcano pkg/controllers/podgroup/pg_controller.go and pg_controller_handler.go.
Deviates: upstream's pg controller records no Event for a refused create (it only logs and retries).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pumice.api import Obj, scheme
from pumice.api.meta import owner_reference
from pumice.client.base import ApiError, KubeClient, create_unless_exists, is_not_found
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.job import resources as res
from pumice.controllers.volcano.job.builders import scheduling_annotations
from pumice.runtime.reconcile import Result

log = logging.getLogger(__name__)

_OWNER_KINDS = {"ReplicaSet": scheme.REPLICA_SET, "Job": scheme.JOB}

POD_GROUP_ERROR = "PodGroupError"
"""Event reason of a refused PodGroup create (volcano batch/v1alpha1 JobEvent ``PodGroupError``)."""


def podgroup_name_for_pod(pod: Obj) -> str:
    """``podgroup-<uid>`` of the Pod's controller owner, else of the Pod."""
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return keys.POD_GROUP_NAME_PREFIX + str(ref.get("uid", ""))
    return keys.POD_GROUP_NAME_PREFIX + str(pod["metadata"].get("uid", ""))


def build_podgroup_for_pod(pod: Obj, owner_annotations: dict[str, str] | None = None,
                           *, inherit_owner_annotations: bool = True) -> Obj:
    """The PodGroup of a bare/workload Pod (pure)."""
    owner_ann = owner_annotations or {}
    min_member = 1
    if inherit_owner_annotations and keys.GROUP_MIN_MEMBER_ANNOTATION_KEY in owner_ann:
        try:
            v = int(owner_ann[keys.GROUP_MIN_MEMBER_ANNOTATION_KEY])
            if v >= 0:
                min_member = v
        except ValueError:
            pass
    md = pod["metadata"]
    refs = [r for r in md.get("ownerReferences") or []]
    if not any(r.get("controller") for r in refs):
        refs = [owner_reference({"apiVersion": "v1", "kind": "Pod", "metadata": md})]
    pann = md.get("annotations") or {}
    plabels = md.get("labels") or {}
    ann: dict[str, str] = {}
    labels: dict[str, str] = {}
    if inherit_owner_annotations:
        ann.update({k: v for k, v in owner_ann.items() if k.startswith("volcano.sh/")})
    ann.update(scheduling_annotations(pann))
    for k in (keys.POD_PREEMPTABLE, keys.COOLDOWN_TIME):
        if k in plabels:
            labels[k] = plabels[k]
    spec: Obj = {
        "minMember": min_member,
        # CalTaskRequests: quotav1.Add min_member times keeps the Pod's quantity formats
        "minResources": res.fmt_in(*res.task_requests(pod.get("spec") or {}, min_member)),
    }
    if (pod.get("spec") or {}).get("priorityClassName"):
        spec["priorityClassName"] = pod["spec"]["priorityClassName"]
    if keys.QUEUE_NAME_ANNOTATION_KEY in pann:
        spec["queue"] = pann[keys.QUEUE_NAME_ANNOTATION_KEY]
    meta: Obj = {"name": podgroup_name_for_pod(pod), "namespace": md.get("namespace", "default"),
                 "ownerReferences": refs}
    if ann:
        meta["annotations"] = ann
    if labels:
        meta["labels"] = labels
    return {"apiVersion": keys.SCHEDULING_API_VERSION, "kind": "PodGroup", "metadata": meta, "spec": spec,
            "status": {"phase": "Pending"}}


class PodGroupReconciler:
    """Reconciles one Pod (Request = the Pod's namespace/name)."""

    def __init__(self, client: KubeClient, pods: Any, podgroups: Any,
                 scheduler_names: tuple[str, ...] = (keys.DEFAULT_SCHEDULER_NAME,),
                 owners: dict[str, Any] | None = None, inherit_owner_annotations: bool = True,
                 event: Callable[[Obj, str, str, str], Any] | None = None) -> None:
        """``event(obj, type, reason, message)`` records an Event (an EventRecorder's ``event``);
        None records none."""
        self.client = client
        self.event = event
        self._refused: dict[tuple[str, str], tuple[str, str]] = {}
        """(namespace, name) -> (Pod uid, the last refusal recorded as an Event for it), so a retry
        refused the same way records none; dropped once the Pod is gone or has its PodGroup."""
        self.pods = pods
        self.podgroups = podgroups
        self.scheduler_names = scheduler_names
        self.owners = owners or {}
        self.inherit_owner_annotations = inherit_owner_annotations

    def _owner_annotations(self, pod: Obj) -> dict[str, str]:
        out: dict[str, str] = {}
        for ref in pod["metadata"].get("ownerReferences") or []:
            store = self.owners.get(str(ref.get("kind", "")))
            if store is None:
                continue
            owner = store.get(pod["metadata"].get("namespace"), ref.get("name", ""))
            for k, v in ((owner or {}).get("metadata", {}).get("annotations") or {}).items():
                out.setdefault(k, v)
        return out

    async def reconcile(self, req: Any) -> Any:
        pod = self.pods.get(req.namespace, req.name)
        if pod is None:
            self._refused.pop((req.namespace, req.name), None)
            return Result()
        if (pod.get("spec") or {}).get("schedulerName") not in self.scheduler_names:
            return Result()
        md = pod["metadata"]
        if (md.get("annotations") or {}).get(keys.KUBE_GROUP_NAME_ANNOTATION_KEY) or md.get("deletionTimestamp"):
            return Result()
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return Result()
        name = podgroup_name_for_pod(pod)
        if self.podgroups.get(md.get("namespace"), name) is None:
            pg = build_podgroup_for_pod(pod, self._owner_annotations(pod),
                                        inherit_owner_annotations=self.inherit_owner_annotations)
            try:
                await create_unless_exists(self.client, pg)
            except Exception as e:
                self._record_refusal(pod, e)
                raise
        self._refused.pop((req.namespace, req.name), None)
        try:
            await self.client.patch(scheme.POD, req.name, {"metadata": {"annotations": {keys.KUBE_GROUP_NAME_ANNOTATION_KEY: name}}},
                                    req.namespace)
        except Exception as e:
            if not is_not_found(e):
                raise
        return Result()

    def _record_refusal(self, pod: Obj, e: Exception) -> None:
        """A Warning ``PodGroupError`` Event on the Pod, unless this refusal was the last one recorded."""
        if self.event is None:
            return
        message = f"Failed to create PodGroup, err: {e.message if isinstance(e, ApiError) else e}"
        md = pod["metadata"]
        key, seen = (md.get("namespace", ""), md.get("name", "")), (str(md.get("uid", "")), message)
        if self._refused.get(key) == seen:
            return
        self._refused[key] = seen
        self.event({"apiVersion": "v1", "kind": "Pod", **pod}, "Warning", POD_GROUP_ERROR, message)


class ScaledToZeroReconciler:
    """Deletes ``podgroup-<uid>`` of a ReplicaSet whose ``spec.replicas`` is 0."""

    def __init__(self, client: KubeClient, replicasets: Any, podgroups: Any) -> None:
        self.client = client
        self.replicasets = replicasets
        self.podgroups = podgroups

    async def reconcile(self, req: Any) -> Any:
        rs = self.replicasets.get(req.namespace, req.name)
        if rs is None or int((rs.get("spec") or {}).get("replicas", 1) or 0) != 0:
            return Result()
        name = keys.POD_GROUP_NAME_PREFIX + str(rs["metadata"].get("uid", ""))
        if self.podgroups.get(req.namespace, name) is not None:
            try:
                await self.client.delete(scheme.POD_GROUP, name, req.namespace)
            except Exception as e:
                if not is_not_found(e):
                    raise
        return Result()
