"""Wiring of the Volcano controllers on a :class:`pumice.runtime.manager.Manager`.

Controllers registered:

- ``volcano-queue``: Queues, fed by PodGroup and Command events; the ``root`` and ``default``
  queues are created by a runnable at start;
- ``volcano-podgroup``: Pods with a Volcano schedulerName and no group annotation;
- ``volcano-podgroup-scale``: ReplicaSets scaled to zero lose their PodGroup;
- ``volcano-job``: vcjobs, fed by their Pods, PodGroup phase changes and Commands;
- ``volcano-cronjob``: batch.volcano.sh CronJobs, fed by the Jobs they own;
- ``volcano-jobflow``: flow.volcano.sh JobFlows, fed by the Jobs they own;
- ``volcano-hypernode-status``: every HyperNode's ``status.nodeCount``, fed by Nodes;
- ``volcano-hypernode-discovery``: label-sourced HyperNodes from Node labels, fed by Nodes,
  HyperNodes and the ``volcano-system/volcano-controller-configmap`` ConfigMap;
- ``volcano-sharding``: NodeShards from ``volcano-system/volcano-sharding-configmap``, fed by
  Nodes and Pod placements.

Mirrors: volcano cmd/controller-manager (the queue, podgroup and job controllers).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pumice.api import Obj, scheme
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.cronjob import CronJobReconciler
from pumice.controllers.volcano.hypernode import (
    DISCOVERY_REQUEST,
    HyperNodeDiscoveryReconciler,
    HyperNodeStatusReconciler,
    hypernodes_to_all,
    is_discovery_config,
)
from pumice.controllers.volcano.job.controller import JobReconciler
from pumice.controllers.volcano.jobflow import JobFlowReconciler
from pumice.controllers.volcano.podgroup import PodGroupReconciler, ScaledToZeroReconciler
from pumice.controllers.volcano.queue import (
    QUEUE_INDEX,
    PodGroupCounts,
    QueueReconciler,
    children_of,
    command_target,
    ensure_default_queues,
    pg_queue_indexer,
)
from pumice.controllers.volcano.sharding import (
    SHARDING_REQUEST,
    ShardingReconciler,
    is_sharding_config,
    sharding_configured,
)
from pumice.runtime.predicates import FuncPredicate
from pumice.runtime.reconcile import Request

log = logging.getLogger(__name__)


def _pg_to_queue(pg: Obj) -> list[Request]:
    return [Request("", str((pg.get("spec") or {}).get("queue") or keys.DEFAULT_QUEUE))]


def _cmd_to_queue(cmd: Obj) -> list[Request]:
    kind, name = command_target(cmd)
    return [Request("", name)] if kind == "Queue" and name else []


def _cmd_to_job(cmd: Obj) -> list[Request]:
    kind, name = command_target(cmd)
    ns = (cmd.get("metadata") or {}).get("namespace") or ""
    return [Request(ns, name)] if kind == "Job" and name else []


def _pg_to_job(pg: Obj) -> list[Request]:
    md = pg.get("metadata") or {}
    for ref in md.get("ownerReferences") or []:
        if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch.volcano.sh/"):
            return [Request(md.get("namespace") or "", str(ref.get("name", "")))]
    return []


def _phase(obj: Obj) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def _job_changed(old: Obj, new: Obj) -> bool:
    """Upstream updateJob: only spec changes and phase changes enqueue (a deletionTimestamp
    alone does not: the reconcile of a Job being deleted does nothing)."""
    return old.get("spec") != new.get("spec") or ((old.get("status") or {}).get("state") or {}).get("phase") != (
        (new.get("status") or {}).get("state") or {}).get("phase")


def _never(_obj: Obj) -> bool:
    return False


@dataclass(frozen=True)
class VolcanoOptions:
    """Options of the Volcano controllers.

    Attributes:
        scheduler_names: Pods with one of these schedulerNames get PodGroups.
        create_default_queue: create ``root`` and ``default`` at start when missing.
        workers: concurrent reconciles of the job and podgroup controllers (a Job or Pod is never
            reconciled by two workers at once).
    """

    scheduler_names: tuple[str, ...] = (keys.DEFAULT_SCHEDULER_NAME,)
    create_default_queue: bool = True
    workers: int = 4


def setup_queue_controller(mgr: Any, opts: VolcanoOptions) -> None:
    """``volcano-queue``: Queues, fed by PodGroup phase/queue changes, Commands and child Queues'
    state; with ``opts.create_default_queue`` a runnable creates ``root`` and ``default``."""
    informers = mgr.informers
    pg_inf = informers.informer(scheme.POD_GROUP)
    pg_inf.add_indexer(QUEUE_INDEX, pg_queue_indexer)
    counts = PodGroupCounts()
    pg_inf.add_event_handler(counts.on_add, counts.on_update, counts.on_delete)
    queues = informers.informer(scheme.QUEUE).lister
    (mgr.controller("volcano-queue")
        .for_(scheme.QUEUE)
        .watches(scheme.POD_GROUP, _pg_to_queue,
                 predicates=FuncPredicate(update=lambda o, n: _phase(o) != _phase(n) or (o.get("spec") or {}).get(
                     "queue") != (n.get("spec") or {}).get("queue") or bool(n["metadata"].get("deletionTimestamp"))))
        .watches(scheme.COMMAND, _cmd_to_queue)
        .watches(scheme.QUEUE, children_of(queues),
                 predicates=FuncPredicate(update=lambda o, n: (o.get("status") or {}).get("state") != (
                     n.get("status") or {}).get("state")))
        .complete(QueueReconciler(mgr.client, queues, pg_inf.lister, informers.informer(scheme.COMMAND).lister,
                                  mgr.event_recorder("vc-controller-manager"), counts)))
    if opts.create_default_queue:
        async def default_queue() -> None:
            delay = 0.05
            while True:
                try:
                    await ensure_default_queues(mgr.client)
                    return
                except Exception as e:
                    log.warning("creating the default queue failed (%s); retrying in %.2fs", e, delay)
                    await mgr.clock.sleep(delay)
                    delay = min(delay * 2, 5.0)

        mgr.add_runnable(default_queue, needs_leader=True, name="volcano-default-queue")


def setup_podgroup_controllers(mgr: Any, opts: VolcanoOptions) -> None:
    """``volcano-podgroup`` (Pods of a Volcano scheduler without a group) and
    ``volcano-podgroup-scale`` (ReplicaSets scaled to zero lose their PodGroup)."""
    informers = mgr.informers
    podgroups = informers.informer(scheme.POD_GROUP).lister

    def volcano_pod_without_group(pod: Obj) -> bool:
        return (pod.get("spec") or {}).get("schedulerName") in opts.scheduler_names and not (
            (pod.get("metadata") or {}).get("annotations") or {}).get(keys.KUBE_GROUP_NAME_ANNOTATION_KEY)

    owners = {"ReplicaSet": informers.informer(scheme.REPLICA_SET).lister,
              "Job": informers.informer(scheme.JOB).lister}
    (mgr.controller("volcano-podgroup")
        .for_(scheme.POD, predicates=FuncPredicate(create=volcano_pod_without_group,
                                                 update=lambda o, n: volcano_pod_without_group(n),
                                                 delete=lambda o: False))
        .with_options(max_concurrent_reconciles=opts.workers)
        .complete(PodGroupReconciler(mgr.client, informers.informer(scheme.POD).lister, podgroups,
                                     opts.scheduler_names, owners,
                                     event=mgr.event_recorder("vc-controller-manager").event)))
    (mgr.controller("volcano-podgroup-scale")
        .for_(scheme.REPLICA_SET)
        .complete(ScaledToZeroReconciler(mgr.client, owners["ReplicaSet"], podgroups)))


def setup_job_controller(mgr: Any, opts: VolcanoOptions) -> None:
    """``volcano-job``: vcjobs, fed by their Pods, PodGroup phase changes and Commands.

    Enqueues as upstream's handlers (job_controller_handler.go) do: a Job's creation, and its
    updates that change the spec or the phase (not its deletion: ``deleteJob`` only drops the
    Job from the controller's cache, here :meth:`JobReconciler.forget`); every event of a Pod it
    controls; a PodGroup's updates that change its phase (upstream registers no add or delete
    handler for PodGroups); every Command."""
    informers = mgr.informers
    jobs = informers.informer(scheme.VCJOB)
    reconciler = JobReconciler(mgr.client, jobs=jobs.lister, pods=informers.informer(scheme.POD).lister,
                               podgroups=informers.informer(scheme.POD_GROUP).lister,
                               queues=informers.informer(scheme.QUEUE).lister,
                               commands=informers.informer(scheme.COMMAND).lister,
                               priorityclasses=informers.informer(scheme.PRIORITY_CLASS).lister, clock=mgr.clock,
                               recorder=mgr.event_recorder("vc-controller-manager"))
    jobs.add_event_handler(on_delete=reconciler.forget)
    (mgr.controller("volcano-job")
        .for_(scheme.VCJOB, predicates=FuncPredicate(update=_job_changed, delete=_never))
        .owns(scheme.POD)
        .watches(scheme.POD_GROUP, _pg_to_job, predicates=FuncPredicate(
            create=_never, update=lambda o, n: _phase(o) != _phase(n), delete=_never))
        .watches(scheme.COMMAND, _cmd_to_job)
        .with_options(max_concurrent_reconciles=opts.workers)
        .complete(reconciler))


def setup_cronjob_controller(mgr: Any, opts: VolcanoOptions) -> None:
    """``volcano-cronjob``: batch.volcano.sh CronJobs, fed by the Jobs they own."""
    informers = mgr.informers
    (mgr.controller("volcano-cronjob")
        .for_(scheme.CRON_JOB)
        .owns(scheme.VCJOB)
        .complete(CronJobReconciler(mgr.client, informers.informer(scheme.CRON_JOB).lister,
                                    informers.informer(scheme.VCJOB).lister, mgr.clock,
                                    mgr.event_recorder("vc-controller-manager").event)))


def setup_jobflow_controller(mgr: Any, opts: VolcanoOptions) -> None:
    """``volcano-jobflow``: flow.volcano.sh JobFlows, fed by the Jobs they own."""
    informers = mgr.informers
    (mgr.controller("volcano-jobflow")
        .for_(scheme.JOB_FLOW)
        .owns(scheme.VCJOB)
        .complete(JobFlowReconciler(mgr.client, informers.informer(scheme.JOB_FLOW).lister,
                                    informers.informer(scheme.JOB_TEMPLATE).lister,
                                    informers.informer(scheme.VCJOB).lister,
                                    mgr.event_recorder("vc-controller-manager").event)))


def _node_labels_changed(o: Obj, n: Obj) -> bool:
    return (o.get("metadata") or {}).get("labels") != (n.get("metadata") or {}).get("labels")


def setup_hypernode_controllers(mgr: Any, opts: VolcanoOptions) -> None:
    """``volcano-hypernode-status`` (``status.nodeCount``, fed by Nodes) and
    ``volcano-hypernode-discovery`` (label-sourced HyperNodes, fed by Nodes, HyperNodes and the
    discovery ConfigMap)."""
    informers = mgr.informers
    nodes = informers.informer(scheme.NODE).lister
    hns = informers.informer(scheme.HYPER_NODE).lister
    cms = informers.informer(scheme.CONFIG_MAP).lister
    (mgr.controller("volcano-hypernode-status")
        .for_(scheme.HYPER_NODE)
        .watches(scheme.NODE, hypernodes_to_all(hns), predicates=FuncPredicate(update=_node_labels_changed))
        .complete(HyperNodeStatusReconciler(mgr.client, nodes, hns)))
    (mgr.controller("volcano-hypernode-discovery")
        .for_(scheme.CONFIG_MAP, predicates=FuncPredicate(create=is_discovery_config, update=lambda o, n: is_discovery_config(n),
                                                        delete=is_discovery_config))
        .watches(scheme.NODE, lambda _o: [DISCOVERY_REQUEST], predicates=FuncPredicate(update=_node_labels_changed))
        .watches(scheme.HYPER_NODE, lambda _o: [DISCOVERY_REQUEST], predicates=FuncPredicate(create=lambda o: False,
                                                                                            update=lambda o, n: False))
        .complete(HyperNodeDiscoveryReconciler(mgr.client, nodes, hns, cms)))


def setup_sharding_controller(mgr: Any, opts: VolcanoOptions) -> None:
    """``volcano-sharding``: NodeShards from ``volcano-system/volcano-sharding-configmap``, fed by
    Nodes and Pod placements."""
    informers = mgr.informers
    configmaps = informers.informer(scheme.CONFIG_MAP).lister

    # Node and Pod events enqueue only while a sharding configuration is cached: without one the
    # reconcile does nothing, and the ConfigMap's own event enqueues when one appears
    def configured(_o: Obj) -> bool:
        return sharding_configured(configmaps)

    def placement_changed(o: Obj, n: Obj) -> bool:
        return sharding_configured(configmaps) and (
            (o.get("spec") or {}).get("nodeName") != (n.get("spec") or {}).get("nodeName") or (
                o.get("status") or {}).get("phase") != (n.get("status") or {}).get("phase"))

    (mgr.controller("volcano-sharding")
        .for_(scheme.CONFIG_MAP, predicates=FuncPredicate(create=is_sharding_config, update=lambda o, n: is_sharding_config(n),
                                                        delete=is_sharding_config))
        .watches(scheme.NODE, lambda _o: [SHARDING_REQUEST],
                 predicates=FuncPredicate(create=configured, update=lambda _o, n: configured(n), delete=configured))
        .watches(scheme.POD, lambda _o: [SHARDING_REQUEST],
                 predicates=FuncPredicate(create=configured, update=placement_changed, delete=configured))
        .complete(ShardingReconciler(mgr.client, informers.informer(scheme.NODE).lister, informers.informer(scheme.POD).lister,
                                     informers.informer(scheme.NODE_SHARD).lister, configmaps)))


SETUPS: tuple[Callable[[Any, VolcanoOptions], None], ...] = (
    setup_queue_controller, setup_podgroup_controllers, setup_job_controller, setup_cronjob_controller,
    setup_jobflow_controller, setup_hypernode_controllers, setup_sharding_controller,
)
"""Each controller's own setup, in registration order."""


def setup_controllers(mgr: Any, *, scheduler_names: tuple[str, ...] = (keys.DEFAULT_SCHEDULER_NAME,),
                      create_default_queue: bool = True, workers: int = 4) -> None:
    """Register the Volcano controllers (see module docstring and :class:`VolcanoOptions`) on ``mgr``."""
    opts = VolcanoOptions(scheduler_names, create_default_queue, workers)
    for setup in SETUPS:
        setup(mgr, opts)


__all__ = ["SETUPS", "VolcanoOptions", "setup_controllers"]
