"""Helpers the batch-scheduler adapters share.

Mirrors: kuberay ray-operator/controllers/ray/batchscheduler/utils/utils.go (AddSchedulerNameToObject).
"""

from __future__ import annotations

from pumice.api import Obj
from pumice.controllers.ray import constants as c


def add_scheduler_name(child: Obj, scheduler_name: str) -> None:
    """``spec.schedulerName`` on a Pod or pod template; a RayCluster child is left alone."""
    if child.get("kind") not in (None, "Pod"):
        return
    spec = child.get("spec")
    if isinstance(spec, dict):
        spec["schedulerName"] = scheduler_name


def labels_of(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def gang_scheduling_enabled(obj: Obj) -> bool:
    """The parent carries the label ``ray.io/gang-scheduling-enabled`` (any value)."""
    return c.RAY_GANG_SCHEDULING_ENABLED_LABEL_KEY in labels_of(obj)
