"""The KAI scheduler adapter: Pods get ``schedulerName: kai-scheduler`` and the parent's
``kai.scheduler/queue`` label (without it KAI leaves them Pending); RayJobs in K8sJobMode are
refused (the submitter Pod comes after the cluster is ready, so it cannot be part of the gang).
KAI's own pod-grouper builds the PodGroup; KubeRay creates nothing.

Mirrors: kuberay ray-operator/controllers/ray/batchscheduler/kai-scheduler/kai_scheduler.go.
"""

from __future__ import annotations

from pumice.api import Obj
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.batchscheduler._common import add_scheduler_name, labels_of
from pumice.controllers.ray.common import job as jobb

PLUGIN_NAME = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
K8S_JOB_MODE_REFUSED = ("KAI-Scheduler does not support RayJob with K8sJobMode: the submitter pod is created after "
                        "RayCluster is ready, preventing proper gang scheduling")


class KaiBatchScheduler:
    """``--batch-scheduler=kai-scheduler`` (see module docstring)."""

    name = PLUGIN_NAME

    async def do_batch_scheduling_on_submission(self, obj: Obj) -> None:
        """Raises:
            ValueError: a RayJob in K8sJobMode."""
        if obj.get("kind") == "RayJob" and jobb.submission_mode(obj) == c.JobSubmissionMode.K8S_JOB_MODE:
            raise ValueError(K8S_JOB_MODE_REFUSED)

    def add_metadata_to_child_resource(self, parent: Obj, child: Obj, group_name: str) -> None:
        add_scheduler_name(child, self.name)
        queue = labels_of(parent).get(QUEUE_LABEL)
        if queue:
            child.setdefault("metadata", {}).setdefault("labels", {})[QUEUE_LABEL] = queue

    async def cleanup_on_completion(self, obj: Obj) -> bool:
        return False
