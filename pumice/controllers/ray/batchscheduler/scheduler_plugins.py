"""The scheduler-plugins (coscheduling) adapter: for a RayCluster labelled
``ray.io/gang-scheduling-enabled``, one ``scheduling.x-k8s.io/v1alpha1`` PodGroup named after the
cluster (minMember = desired workers + 1, minResources = desired totals, a non-controller owner
reference), created once and never resized; Pods get ``scheduling.x-k8s.io/pod-group`` and
``schedulerName: scheduler-plugins-scheduler``. RayJobs are refused.

Mirrors: kuberay ray-operator/controllers/ray/batchscheduler/scheduler-plugins/scheduler_plugins.go.
"""

from __future__ import annotations

from pumice.api import Obj, scheme
from pumice.client.base import KubeClient, is_already_exists, is_not_found
from pumice.controllers.ray.batchscheduler._common import add_scheduler_name, gang_scheduling_enabled
from pumice.controllers.ray.common import resources as res

PLUGIN_NAME = "scheduler-plugins"
SCHEDULER_INSTANCE_NAME = "scheduler-plugins-scheduler"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def build_pod_group(cluster: Obj) -> Obj:
    meta = cluster["metadata"]
    spec = cluster.get("spec") or {}
    return {
        "apiVersion": f"{scheme.SCHEDULER_PLUGINS_POD_GROUP.group}/{scheme.SCHEDULER_PLUGINS_POD_GROUP.version}",
        "kind": "PodGroup",
        "metadata": {"name": meta["name"], "namespace": meta.get("namespace", "default"),
                     "ownerReferences": [{"apiVersion": cluster.get("apiVersion", "ray.io/v1"),
                                          "kind": cluster.get("kind", "RayCluster"), "name": meta["name"],
                                          "uid": meta.get("uid", "")}]},
        "spec": {"minMember": res.desired_worker_pods(spec) + 1,
                 "minResources": res.format_resource_list(*res.desired_quantities(spec))},
    }


class SchedulerPluginsBatchScheduler:
    """``--batch-scheduler=scheduler-plugins`` (see module docstring)."""

    name = SCHEDULER_INSTANCE_NAME

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def do_batch_scheduling_on_submission(self, obj: Obj) -> None:
        """Raises:
            TypeError: not a RayCluster (upstream: "currently only RayCluster is supported")."""
        if obj.get("kind") != "RayCluster":
            raise TypeError(f"currently only RayCluster is supported, got {obj.get('kind')}")
        if not gang_scheduling_enabled(obj):
            return
        meta = obj["metadata"]
        try:
            await self.client.get(scheme.SCHEDULER_PLUGINS_POD_GROUP, meta["name"], meta.get("namespace", "default"))
            return
        except Exception as e:
            if not is_not_found(e):
                raise
        try:
            await self.client.create(build_pod_group(obj))
        except Exception as e:
            if is_already_exists(e):
                return
            raise RuntimeError(f"failed to create PodGroup: {e}") from e

    def add_metadata_to_child_resource(self, parent: Obj, child: Obj, group_name: str) -> None:
        if gang_scheduling_enabled(parent):
            child.setdefault("metadata", {}).setdefault("labels", {})[POD_GROUP_LABEL] = parent["metadata"]["name"]
        add_scheduler_name(child, self.name)

    async def cleanup_on_completion(self, obj: Obj) -> bool:
        return False
