"""Batch-scheduler adapters: the seam between KubeRay and a gang scheduler.

One scheduler per operator, chosen at start-up by name (``--batch-scheduler``); no name means
:class:`DefaultBatchScheduler`, a no-op, so the controllers never branch on "is batch scheduling
on". Unknown names raise :class:`UnknownBatchSchedulerError` listing the known ones.

Mirrors: kuberay ray-operator/controllers/ray/batchscheduler/interface/interface.go and
schedulermanager.go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pumice.api import Obj
from pumice.client.base import KubeClient


class BatchScheduler(Protocol):
    """The four hooks of a batch scheduler.

    ``name`` is the Pods' ``schedulerName`` (``""`` for the default scheduler).
    """

    name: str

    async def do_batch_scheduling_on_submission(self, obj: Obj) -> None:
        """Create or update the scheduler's group object for a RayCluster or RayJob (every
        RayCluster reconcilePods pass, every RayJob Initializing pass). Raises on failure."""
        ...

    def add_metadata_to_child_resource(self, parent: Obj, child: Obj, group_name: str) -> None:
        """Add labels, annotations and ``schedulerName`` to a Pod, pod template or RayCluster
        (``child``, modified in place)."""
        ...

    async def cleanup_on_completion(self, obj: Obj) -> bool:
        """Release what a finished, suspended or retrying RayJob holds; True when it changed
        something."""
        ...


class DefaultBatchScheduler:
    """No batch scheduler: Pods go to the default scheduler; every hook does nothing."""

    name = ""

    async def do_batch_scheduling_on_submission(self, obj: Obj) -> None:
        return None

    def add_metadata_to_child_resource(self, parent: Obj, child: Obj, group_name: str) -> None:
        return None

    async def cleanup_on_completion(self, obj: Obj) -> bool:
        return False


class UnknownBatchSchedulerError(ValueError):
    """``--batch-scheduler`` named a scheduler pumice does not implement."""


def _volcano(client: KubeClient) -> BatchScheduler:
    from pumice.controllers.ray.batchscheduler.volcano import VolcanoBatchScheduler

    return VolcanoBatchScheduler(client)


def _yunikorn(client: KubeClient) -> BatchScheduler:
    from pumice.controllers.ray.batchscheduler.yunikorn import YuniKornBatchScheduler

    return YuniKornBatchScheduler()


def _scheduler_plugins(client: KubeClient) -> BatchScheduler:
    from pumice.controllers.ray.batchscheduler.scheduler_plugins import SchedulerPluginsBatchScheduler

    return SchedulerPluginsBatchScheduler(client)


def _kai(client: KubeClient) -> BatchScheduler:
    from pumice.controllers.ray.batchscheduler.kai import KaiBatchScheduler

    return KaiBatchScheduler()


FACTORIES: dict[str, Callable[[KubeClient], BatchScheduler]] = {
    "volcano": _volcano,
    "yunikorn": _yunikorn,
    "scheduler-plugins": _scheduler_plugins,
    "kai-scheduler": _kai,
}


def new_batch_scheduler(name: str | None, client: KubeClient) -> BatchScheduler:
    """The scheduler for ``--batch-scheduler=name`` (None, ``""`` or ``"none"`` → the no-op default).

    Raises:
        UnknownBatchSchedulerError: ``name`` is not registered; the message lists known names.
    """
    if not name or name == "none":
        return DefaultBatchScheduler()
    try:
        factory = FACTORIES[name]
    except KeyError:
        known = ", ".join(sorted(FACTORIES))
        raise UnknownBatchSchedulerError(f"unknown batch scheduler {name!r}; known: {known}") from None
    return factory(client)
