"""The YuniKorn adapter: Pods carry YuniKorn's application id and queue labels, and with gang
scheduling the task-groups annotation and their task-group name. No objects are created.

Task groups (``yunikorn.apache.org/task-groups``, JSON array): the parent's own annotation when it
has a non-empty one, else ``headgroup`` (1 member), one group per worker group (minReplicas ×
numOfHosts members, even without autoscaling) and, for a RayJob, ``submittergroup`` (1); each with
one Pod's resources as ``minResource`` and the template's nodeSelector, tolerations and affinity.
The JSON keys follow upstream's struct order.

Mirrors: kuberay ray-operator/controllers/ray/batchscheduler/yunikorn/yunikorn_scheduler.go and
yunikorn_task_groups.go.
"""

from __future__ import annotations

import json

from pumice.api import Obj
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.batchscheduler._common import (
    add_scheduler_name,
    gang_scheduling_enabled,
    labels_of,
)
from pumice.controllers.ray.common import job as jobb
from pumice.controllers.ray.common import resources as res

PLUGIN_NAME = "yunikorn"
POD_APPLICATION_ID_LABEL = "applicationId"
POD_QUEUE_LABEL = "queue"
RAY_APPLICATION_ID_LABEL = "yunikorn.apache.org/app-id"
RAY_APPLICATION_QUEUE_LABEL = "yunikorn.apache.org/queue"
TASK_GROUP_NAME_ANNOTATION = "yunikorn.apache.org/task-group-name"
TASK_GROUPS_ANNOTATION = "yunikorn.apache.org/task-groups"


def _task_group(name: str, min_member: int, pod_spec: Obj) -> Obj:
    group: Obj = {"minResource": res.format_resource_list(*res.pod_quantities(pod_spec))}
    if pod_spec.get("nodeSelector"):
        group["nodeSelector"] = dict(pod_spec["nodeSelector"])
    if pod_spec.get("affinity"):
        group["affinity"] = pod_spec["affinity"]
    group["name"] = name
    if pod_spec.get("tolerations"):
        group["tolerations"] = list(pod_spec["tolerations"])
    group["minMember"] = min_member
    return group


def task_groups_from_cluster_spec(spec: Obj) -> list[Obj]:
    head = ((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    groups = [_task_group(c.HEAD_GROUP_NAME, 1, head)]
    for g in spec.get("workerGroupSpecs") or []:
        pod = (g.get("template") or {}).get("spec") or {}
        groups.append(_task_group(g["groupName"], int(g.get("minReplicas") or 0) * res.num_of_hosts(g), pod))
    return groups


def task_groups(parent: Obj) -> list[Obj]:
    """The task groups of a RayCluster or a RayJob (see module docstring)."""
    spec = parent.get("spec") or {}
    if parent.get("kind") == "RayJob":
        cluster_spec = spec.get("rayClusterSpec") or {}
        groups = task_groups_from_cluster_spec(cluster_spec)
        submitter = jobb.submitter_template(parent, cluster_spec).get("spec") or {}
        groups.append(_task_group(c.SUBMITTER_GROUP_NAME, 1, submitter))
        return groups
    return task_groups_from_cluster_spec(spec)


class YuniKornBatchScheduler:
    """``--batch-scheduler=yunikorn`` (see module docstring)."""

    name = PLUGIN_NAME

    async def do_batch_scheduling_on_submission(self, obj: Obj) -> None:
        return None

    def add_metadata_to_child_resource(self, parent: Obj, child: Obj, group_name: str) -> None:
        meta = child.setdefault("metadata", {})
        labels = meta.setdefault("labels", {})
        plabels = labels_of(parent)
        for source, target in ((RAY_APPLICATION_ID_LABEL, POD_APPLICATION_ID_LABEL),
                               (RAY_APPLICATION_QUEUE_LABEL, POD_QUEUE_LABEL)):
            if plabels.get(source):
                labels[target] = plabels[source]
        add_scheduler_name(child, self.name)
        if not gang_scheduling_enabled(parent):
            return
        own = ((parent.get("metadata") or {}).get("annotations") or {}).get(TASK_GROUPS_ANNOTATION)
        ann = meta.setdefault("annotations", {})
        ann[TASK_GROUPS_ANNOTATION] = own or json.dumps(task_groups(parent), separators=(",", ":"))
        if group_name:
            ann[TASK_GROUP_NAME_ANNOTATION] = group_name

    async def cleanup_on_completion(self, obj: Obj) -> bool:
        return False
