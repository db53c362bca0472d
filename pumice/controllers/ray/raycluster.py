"""The RayCluster controller.

One pass: observe (the RayCluster, its Pods and Services), converge (ordered idempotent
sub-reconcilers: autoscaler RBAC → head Ingress → auth Secret → head Service → headless Service →
serve Service → Pods, stopping at the first error), then compute the status from what was observed
plus that error and write it once, only if a meaningful field changed.

Requeue: error or status change → 2 s; otherwise 300 s (``RAYCLUSTER_DEFAULT_REQUEUE_SECONDS``).

Mirrors: kuberay ray-operator/controllers/ray/raycluster_controller.go (rayClusterReconcile,
reconcileIngress, reconcileHeadService, reconcileHeadlessService, reconcileServeService,
reconcilePods, shouldDeletePod, calculateStatus, updateEndpoints, updateHeadInfo) and
utils/consistency.go (InconsistentRayClusterStatus).

Deviates:
- The GCS PVC (rocksdb backend, behind a feature gate that is off) sub-reconciler is not
  implemented, nor the OpenShift Route that replaces the head Ingress there.
- Pods and Services are read through a :class:`ClusterReader`: informer stores indexed by the
  ``ray.io/cluster`` label when set up on a Manager (:class:`CacheReader`), or direct list calls
  (:class:`ClientReader`, the default for a bare reconciler).
"""

from __future__ import annotations

import base64
import copy
import logging
import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pumice._util.clock import Clock, default_clock, parse_rfc3339, rfc3339
from pumice._util.duration import go_duration_string
from pumice.api import Obj, scheme
from pumice.api import meta as m
from pumice.api.ray.constants import RayClusterUpgradeType
from pumice.client.base import KubeClient, create_unless_exists, get_or_none, is_already_exists, is_not_found
from pumice.controllers.ray import association as assoc
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.batchscheduler import BatchScheduler, DefaultBatchScheduler
from pumice.controllers.ray.common import gcs_ft as gcsft
from pumice.controllers.ray.common import ingress as ingressb
from pumice.controllers.ray.common import pod as podb
from pumice.controllers.ray.common import rbac
from pumice.controllers.ray.common import resources as res
from pumice.controllers.ray.common import service as svcb
from pumice.controllers.ray.common.hashing import (
    hash_without_replicas_and_workers_to_delete,
    with_raycluster_defaults,
)
from pumice.controllers.ray.expectations import ScaleExpectations
from pumice.controllers.ray.validation import (
    ValidationError,
    validate_raycluster,
    validate_raycluster_status,
    validate_raycluster_upgrade_options,
)
from pumice.controllers.ray.wiring import PRIMARY_PREDICATE, event_recorder, informer_store
from pumice.runtime.reconcile import Request, Result

if TYPE_CHECKING:
    from pumice.controllers.ray.options import RayOperatorOptions

log = logging.getLogger(__name__)

HEAD_GROUP_KEY = ""


class EventRecorder(Protocol):
    def event(self, obj: Obj, type: str, reason: str, message: str) -> Any: ...


class NullRecorder:
    """Logs events instead of writing them (bare reconcilers in tests and tools)."""

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        md = obj.get("metadata") or {}
        log.debug("event %s/%s %s %s: %s", md.get("namespace"), md.get("name"), type, reason, message)


class ClusterReader(Protocol):
    """Where the controller reads a cluster's Pods and head Services from."""

    async def cluster_pods(self, namespace: str, cluster: str) -> list[Obj]: ...

    async def head_services(self, namespace: str, cluster: str) -> list[Obj]: ...

    async def pod_exists(self, namespace: str, name: str) -> bool: ...


class ClientReader:
    """Direct list/get calls with label selectors (always current; one API call each)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def cluster_pods(self, namespace: str, cluster: str) -> list[Obj]:
        sel = assoc.selector_string(assoc.cluster_pods_selector(cluster))
        return (await self.client.list(scheme.POD, namespace, label_selector=sel)).items

    async def head_services(self, namespace: str, cluster: str) -> list[Obj]:
        sel = assoc.selector_string(assoc.head_service_selector(cluster))
        return (await self.client.list(scheme.SERVICE, namespace, label_selector=sel)).items

    async def pod_exists(self, namespace: str, name: str) -> bool:
        try:
            await self.client.get(scheme.POD, name, namespace)
        except Exception as e:
            if is_not_found(e):
                return False
            raise
        return True


class CacheReader:
    """Reads from informer stores (``Store.by_index`` on the ``ray.io/cluster`` label), as
    upstream reads from controller-runtime's cache; the scale expectations cover the lag.

    Args:
        pods / services: informer stores (``get``, ``by_index``); treated as read-only.
    """

    def __init__(self, pods: Any, services: Any) -> None:
        self.pods = pods
        self.services = services
        self.index = "label:" + c.RAY_CLUSTER_LABEL_KEY

    async def cluster_pods(self, namespace: str, cluster: str) -> list[Obj]:
        return [p for p in self.pods.by_index(self.index, cluster)
                if (p.get("metadata") or {}).get("namespace") == namespace]

    async def head_services(self, namespace: str, cluster: str) -> list[Obj]:
        sel = assoc.head_service_selector(cluster)
        return [s for s in self.services.by_index(self.index, cluster)
                if (s.get("metadata") or {}).get("namespace") == namespace
                and assoc.matches((s.get("metadata") or {}).get("labels") or {}, sel)]

    async def pod_exists(self, namespace: str, name: str) -> bool:
        return self.pods.get(namespace, name) is not None


class ReplicaFailureError(Exception):
    """A Pod create/delete failed; ``reason`` is the ReplicaFailure condition reason (or ``""``)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class RayClusterOptions:
    """Operator-wide switches of the RayCluster controller.

    Attributes:
        default_requeue_seconds: ``RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV`` (300).
        enable_random_pod_delete: ``ENABLE_RANDOM_POD_DELETE``.
        enable_gcs_ft_redis_cleanup: ``ENABLE_GCS_FT_REDIS_CLEANUP`` (on): the Redis cleanup
            finalizer and Job of GCS fault-tolerant clusters.
        default_pod_annotations / default_pod_labels: the operator configuration's
            ``defaultPodAnnotations`` / ``defaultPodLabels``: added to every head and worker Pod
            where the template does not set the key.
    """

    pod: podb.PodOptions = podb.DEFAULT_POD_OPTIONS
    service: svcb.ServiceOptions = svcb.DEFAULT_SERVICE_OPTIONS
    default_requeue_seconds: float = c.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS
    enable_random_pod_delete: bool = False
    enable_gcs_ft_redis_cleanup: bool = True
    default_pod_annotations: Mapping[str, str] = field(default_factory=dict)
    default_pod_labels: Mapping[str, str] = field(default_factory=dict)


def _pod_running_and_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and m.pod_is_ready(pod)


def all_pods_running(pods: Sequence[Obj]) -> bool:
    """Every Pod Running and none with Ready != True (and at least one Pod)."""
    if not pods:
        return False
    for p in pods:
        st = p.get("status") or {}
        if st.get("phase") != "Running":
            return False
        ready = m.find_condition(st.get("conditions"), "Ready")
        if ready is not None and ready.get("status") != "True":
            return False
    return True


def should_delete_pod(pod: Obj) -> tuple[bool, str]:
    """Failed/Succeeded → delete; Running with the Ray container (the first) terminated → delete
    only when ``restartPolicy: Never``; otherwise keep. Returns (delete?, reason), with upstream's
    reason texts.

    Mirrors: raycluster_controller.go shouldDeletePod, getRayContainerStateTerminated (a
    ``terminated`` state counts even when empty)."""
    st = pod.get("status") or {}
    phase = st.get("phase")
    name = pod["metadata"].get("name")
    node_type = (pod["metadata"].get("labels") or {}).get(c.RAY_NODE_TYPE_LABEL_KEY, "")
    if phase in ("Failed", "Succeeded"):
        return True, (f"The {node_type} Pod {name} status is {phase} which is a terminal state. KubeRay will delete "
                      "the Pod and create new Pods in the next reconciliation if necessary.")
    containers = pod.get("spec", {}).get("containers") or []
    ray_name = containers[0].get("name") if containers else None
    terminated = next((cs["state"]["terminated"] for cs in st.get("containerStatuses") or []
                       if cs.get("name") == ray_name and (cs.get("state") or {}).get("terminated") is not None), None)
    policy = pod.get("spec", {}).get("restartPolicy", "")
    if phase == "Running" and terminated is not None:
        if policy == "Never":
            return True, (f"The Pod status of the {node_type} Pod {name} is {phase}, and the Ray container terminated "
                          f"status is {terminated}. The container is unable to restart due to its restart policy "
                          f"{policy}, so KubeRay will delete it.")
        return False, (f"The Pod status of the {node_type} Pod {name} is {phase}, and the Ray container terminated "
                       f"status is {terminated}. However, KubeRay will not delete the Pod because its restartPolicy is "
                       f"set to {policy} and it should be able to restart automatically.")
    return False, ""


def head_pod_ready_condition(head: Obj | None) -> Obj:
    """``HeadPodReady`` from the head Pod's Ready condition (see module docs)."""
    if head is None:
        return {"type": c.RayClusterConditionType.HEAD_POD_READY, "status": "False",
                "reason": c.RayClusterConditionReason.HEAD_POD_NOT_FOUND, "message": "Head Pod not found"}
    cond = {"type": c.RayClusterConditionType.HEAD_POD_READY, "status": "False", "reason": "Unknown", "message": ""}
    pc = m.get_condition(head, "Ready")
    if pc is not None:
        cond["status"] = pc.get("status", "False")
        cond["message"] = pc.get("message", "")
        reason = pc.get("reason") or ""
        if pc.get("status") == "True" and not reason:
            reason = c.RayClusterConditionReason.HEAD_POD_RUNNING_AND_READY
        if reason:
            cond["reason"] = reason
        if reason == "ContainersNotReady":
            for cs in (head.get("status") or {}).get("containerStatuses") or []:
                state = cs.get("state") or {}
                detail = state.get("waiting") or state.get("terminated")
                if detail and detail.get("reason"):
                    cond["reason"] = detail["reason"]
                    extra = detail.get("message", "")
                    cond["message"] = f"{cond['message']}; {extra}" if cond["message"] else extra
                    break
    return cond


def suspend_status(status: Obj) -> str:
    """``RayClusterSuspending``, ``RayClusterSuspended`` or ``""`` from the conditions."""
    if m.is_condition_true(status, c.RayClusterConditionType.RAY_CLUSTER_SUSPENDING):
        return c.RayClusterConditionType.RAY_CLUSTER_SUSPENDING
    if m.is_condition_true(status, c.RayClusterConditionType.RAY_CLUSTER_SUSPENDED):
        return c.RayClusterConditionType.RAY_CLUSTER_SUSPENDED
    return ""


_STATUS_KEYS = ("state", "reason", "readyWorkerReplicas", "availableWorkerReplicas", "desiredWorkerReplicas",
                "minWorkerReplicas", "maxWorkerReplicas", "endpoints", "head", "observedGeneration")


def _conditions_key(conds: Sequence[Obj] | None) -> list[tuple[str, str, str, str]]:
    return sorted((x.get("type", ""), x.get("status", ""), x.get("reason", ""), x.get("message", "")) for x in conds or [])


def inconsistent_status(old: Obj, new: Obj) -> bool:
    """Whether ``new`` differs from ``old`` in a field worth a write (not lastUpdateTime).

    Mirrors: utils/consistency.go InconsistentRayClusterStatus.
    """
    for k in _STATUS_KEYS:
        if (old.get(k) or None) != (new.get(k) or None):
            return True
    for k in ("desiredCPU", "desiredMemory", "desiredGPU", "desiredTPU"):
        if (old.get(k) or "0") != (new.get(k) or "0"):
            return True
    return _conditions_key(old.get("conditions")) != _conditions_key(new.get("conditions"))


class RayClusterReconciler:
    """Reconciles ``ray.io/v1`` RayCluster.

    Args:
        client: the API client.
        recorder: event recorder (``event(obj, type, reason, message)``).
        clock: time source.
        batch_scheduler: the configured adapter (no-op default).
        rng: seeded generator for multi-host replica names.
    """

    def __init__(self, client: KubeClient, *, recorder: EventRecorder | None = None, clock: Clock | None = None,
                 batch_scheduler: BatchScheduler | None = None, options: RayClusterOptions = RayClusterOptions(),
                 rng: random.Random | None = None, reader: ClusterReader | None = None) -> None:
        self.client = client
        self.reader: ClusterReader = reader or ClientReader(client)
        self.recorder: EventRecorder = recorder or NullRecorder()
        self.clock = clock or default_clock()
        self.batch_scheduler: BatchScheduler = batch_scheduler or DefaultBatchScheduler()
        self.options = options
        self.rng = rng or random.Random(0)
        self.expectations = ScaleExpectations()

    @classmethod
    def setup_with_manager(cls, mgr: Any, opts: RayOperatorOptions) -> RayClusterReconciler:
        """Build the reconciler (Pods and Services read from the informer stores when ``mgr`` has
        informers) and register controller ``raycluster``: RayClusters (spec, label and annotation
        changes), owned Pods and Services, and owned PodGroups with ``--batch-scheduler volcano``.

        Mirrors: raycluster_controller.go SetupWithManager."""
        pods = informer_store(mgr, scheme.POD, opts.watch_namespaces)
        services = informer_store(mgr, scheme.SERVICE, opts.watch_namespaces)
        reader = CacheReader(pods, services) if pods is not None else None
        rc = cls(mgr.client, recorder=event_recorder(mgr, "raycluster-controller"), clock=getattr(mgr, "clock", None),
                 batch_scheduler=opts.batch_scheduler, options=opts.raycluster, rng=opts.child_rng(), reader=reader)
        b = opts.controller(mgr, "raycluster").for_(scheme.RAY_CLUSTER, PRIMARY_PREDICATE).owns(scheme.POD).owns(scheme.SERVICE)
        if opts.batch_scheduler_name == "volcano":
            b = b.owns(scheme.POD_GROUP)
        b.with_options(max_concurrent_reconciles=opts.reconcile_concurrency).complete(rc)
        return rc

    # --- entry -----------------------------------------------------------------------------

    async def reconcile(self, req: Request) -> Result:
        try:
            cluster = await self.client.get(scheme.RAY_CLUSTER, req.name, req.namespace)
        except Exception as e:
            if is_not_found(e):
                self.expectations.delete_cluster(req.namespace, req.name)
                return Result()
            raise
        managed_by = cluster.get("spec", {}).get("managedBy")
        if managed_by and managed_by != c.ManagedBy.KUBERAY_OPERATOR:
            return Result()
        cluster.setdefault("spec", {}).setdefault("headGroupSpec", {})
        try:
            validate_raycluster(cluster)
        except ValidationError as e:
            self.recorder.event(cluster, "Warning", e.reason, str(e))
            return Result()
        try:
            validate_raycluster_upgrade_options(cluster)
        except ValidationError as e:
            self.recorder.event(cluster, "Warning", "InvalidRayClusterSpec",
                                f"The RayCluster UpgradeStrategy is invalid {req.namespace}/{req.name}: {e}")
            return Result()
        try:
            validate_raycluster_status(cluster)
        except ValidationError as e:
            self.recorder.event(cluster, "Warning", e.reason, str(e))
            return Result(requeue_after=c.RAYCLUSTER_REQUEUE_AFTER_CHANGE_SECONDS)
        status = cluster.get("status") or {}
        ft_result = await self._reconcile_gcs_ft_finalizer(cluster)
        if ft_result is not None:
            return ft_result
        if cluster["metadata"].get("deletionTimestamp"):
            return Result()

        ns = cluster["metadata"].get("namespace", "default")
        reconcile_err: Exception | None = None
        try:
            await self._reconcile_autoscaler_rbac(cluster)
            await self._reconcile_ingress(cluster)
            await self._reconcile_auth_secret(cluster)
            await self._reconcile_head_service(cluster)
            await self._reconcile_headless_service(cluster)
            await self._reconcile_serve_service(cluster)
            await self._reconcile_pods(cluster)
        except Exception as e:  # the status pass records it; re-raised below after the write
            reconcile_err = e
            log.info("RayCluster %s/%s reconcile error: %s", ns, req.name, e)

        pods = await self._list_pods(ns, req.name)
        changed = False
        try:
            new_status = await self._calculate_status(cluster, pods, reconcile_err)
        except (RuntimeError, LookupError) as e:  # upstream: the status is not written; the reconcile error wins
            log.info("RayCluster %s/%s: status not calculated: %s", ns, req.name, e)
            if reconcile_err is None:
                raise
        else:
            changed = inconsistent_status(status, new_status)
            if changed:
                updated = dict(cluster)
                updated["status"] = new_status
                await self.client.update_status(updated)
        if reconcile_err is not None:
            if isinstance(reconcile_err, ReplicaFailureError | ValueError):
                return Result(requeue_after=c.RAYCLUSTER_REQUEUE_AFTER_CHANGE_SECONDS)
            raise reconcile_err
        if changed:
            return Result(requeue_after=c.RAYCLUSTER_REQUEUE_AFTER_CHANGE_SECONDS)
        return Result(requeue_after=self.options.default_requeue_seconds)

    # --- GCS fault tolerance: the Redis cleanup finalizer ----------------------------------------

    async def _reconcile_gcs_ft_finalizer(self, cluster: Obj) -> Result | None:
        """Add the Redis cleanup finalizer to a GCS-FT cluster; on deletion delete its Pods, wait
        for the head to go, run the cleanup Job and drop the finalizer once the Job finished
        (either way) or the deletion timeout passed. Returns a Result when the pass ends here.

        Mirrors: raycluster_controller.go rayClusterReconcile (the GCS FT block) and
        forceRemoveGCSFTFinalizer."""
        md = cluster["metadata"]
        fin = c.GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER
        deleting = bool(md.get("deletionTimestamp"))
        if deleting and gcsft.is_embedded_backend(cluster) and gcsft.has_finalizer(cluster):
            log.info("RayCluster %s/%s: removing the stale Redis cleanup finalizer of an embedded-backend cluster",
                     md.get("namespace", "default"), md["name"])
            await self._remove_finalizer(cluster, fin)
            return Result()
        if not gcsft.needs_redis_cleanup(cluster, self.options.enable_gcs_ft_redis_cleanup):
            return None
        if not deleting:
            return await self._add_gcs_ft_finalizer(cluster)
        if not gcsft.has_finalizer(cluster):
            return Result()
        if await self._delete_pods_before_redis_cleanup(cluster):
            return Result(requeue_after=10.0)
        age = self.clock.now() - parse_rfc3339(md["deletionTimestamp"])
        if age >= gcsft.deletion_timeout_seconds(cluster):
            await self._force_remove_gcs_ft_finalizer(cluster, age)
            return Result()
        jobs = (await self.client.list(scheme.JOB, md.get("namespace", "default"), label_selector=assoc.selector_string(
            gcsft.redis_cleanup_selector(md["name"])))).items
        if jobs:
            return await self._finish_after_redis_cleanup_job(cluster, jobs[0])
        return await self._create_redis_cleanup_job(cluster)

    async def _add_gcs_ft_finalizer(self, cluster: Obj) -> Result | None:
        """Add ``ray.io/gcs-ft-redis-cleanup-finalizer`` when missing (then requeue 2 s)."""
        md = cluster["metadata"]
        fin = c.GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER
        if fin in (md.get("finalizers") or []):
            return None
        log.info("RayCluster %s/%s: GCS fault tolerance is on; adding finalizer %s", md.get("namespace", "default"),
                 md["name"], fin)
        md.setdefault("finalizers", []).append(fin)
        await self.client.update(cluster)
        return Result(requeue_after=c.RAYCLUSTER_REQUEUE_AFTER_CHANGE_SECONDS)

    async def _delete_pods_before_redis_cleanup(self, cluster: Obj) -> bool:
        """Delete the cluster's head and worker Pods (NotFound is fine).

        Returns:
            True while a head Pod still exists: the cleanup must wait for the GCS to be gone."""
        md = cluster["metadata"]
        ns, name = md.get("namespace", "default"), md["name"]
        pods = (await self.client.list(scheme.POD, ns, label_selector=assoc.selector_string(
            assoc.cluster_pods_selector(name)))).items
        heads = []
        for p in pods:
            ntype = (p["metadata"].get("labels") or {}).get(c.RAY_NODE_TYPE_LABEL_KEY)
            if ntype not in (c.RayNodeType.HEAD, c.RayNodeType.WORKER):
                continue
            if ntype == c.RayNodeType.HEAD:
                heads.append(p)
            if not p["metadata"].get("deletionTimestamp"):
                try:
                    await self.client.delete(scheme.POD, p["metadata"]["name"], ns)
                except Exception as e:
                    if not is_not_found(e):
                        raise
        if heads:
            log.info("RayCluster %s/%s: waiting for head Pod %s to terminate before the Redis cleanup (storage "
                     "namespace %s)", ns, name, heads[0]["metadata"]["name"],
                     (heads[0]["metadata"].get("annotations") or {}).get(c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY))
        return bool(heads)

    async def _force_remove_gcs_ft_finalizer(self, cluster: Obj, age: float) -> None:
        """Drop the finalizer ``age`` seconds after deletion, past ``ray.io/gcs-ft-deletion-timeout``,
        with Warning ``ForceDeletedStuckCluster``."""
        md = cluster["metadata"]
        await self._remove_finalizer(cluster, c.GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER)
        self.recorder.event(cluster, "Warning", "ForceDeletedStuckCluster",
                            f"Force-removed GCS FT finalizer after {go_duration_string(age)} due to Redis cleanup "
                            f"timeout; Redis storage namespace "
                            f"\"{(md.get('annotations') or {}).get(c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY, '')}\" "
                            "may need manual cleanup")

    async def _finish_after_redis_cleanup_job(self, cluster: Obj, job: Obj) -> Result:
        """Drop the finalizer once the cleanup Job finished, either way (a failure is logged with
        what to clean by hand); requeue 2 s while it runs."""
        md = cluster["metadata"]
        ns, name = md.get("namespace", "default"), md["name"]
        outcome = gcsft.job_finished(job)
        if not outcome:
            return Result(requeue_after=c.RAYCLUSTER_REQUEUE_AFTER_CHANGE_SECONDS)
        await self._remove_finalizer(cluster, c.GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER)
        if outcome == "Complete":
            log.info("RayCluster %s/%s: the Redis cleanup Job %s completed; the storage namespace is deleted",
                     ns, name, job["metadata"]["name"])
        else:
            log.warning("RayCluster %s/%s: the Redis cleanup Job %s failed; delete the storage namespace in "
                        "Redis by hand (%s)", ns, name, job["metadata"]["name"], gcsft.GCS_FT_DOCS)
        return Result()

    async def _create_redis_cleanup_job(self, cluster: Obj) -> Result:
        """Create ``<cluster>-redis-cleanup`` (AlreadyExists: requeue), with event
        ``CreatedRedisCleanupJob`` or ``FailedToCreateRedisCleanupJob``."""
        ns = cluster["metadata"].get("namespace", "default")
        job = gcsft.build_redis_cleanup_job(cluster, self.options.pod)
        try:
            await self.client.create(job)
        except Exception as e:
            if is_already_exists(e):
                return Result(requeue_after=c.RAYCLUSTER_REQUEUE_AFTER_CHANGE_SECONDS)
            self.recorder.event(cluster, "Warning", "FailedToCreateRedisCleanupJob",
                                f"Failed to create Redis cleanup Job {ns}/{job['metadata']['name']}, {e}")
            raise
        self.recorder.event(cluster, "Normal", "CreatedRedisCleanupJob",
                            f"Created Redis cleanup Job {ns}/{job['metadata']['name']}")
        return Result(requeue_after=c.RAYCLUSTER_REQUEUE_AFTER_CHANGE_SECONDS)

    # --- in-tree autoscaler RBAC -------------------------------------------------------------------

    async def _reconcile_autoscaler_rbac(self, cluster: Obj) -> None:
        """ServiceAccount, Role and RoleBinding of the autoscaler sidecar: created when missing
        (AlreadyExists is fine), never updated. A service account the user named in the head
        template must exist: Warning ``AutoscalerServiceAccountNotFound`` and an error otherwise.

        Mirrors: raycluster_controller.go reconcileAutoscalerServiceAccount, reconcileAutoscalerRole,
        reconcileAutoscalerRoleBinding."""
        if not res.is_autoscaling_enabled(cluster.get("spec") or {}):
            return
        ns, name = cluster["metadata"].get("namespace", "default"), cluster["metadata"]["name"]
        sa = rbac.build_service_account(cluster)
        named = ((cluster["spec"].get("headGroupSpec") or {}).get("template") or {}).get("spec", {}).get(
            "serviceAccountName")
        for kind, obj, created, failed, noun in (
                (scheme.SERVICE_ACCOUNT, sa, "CreatedServiceAccount", "FailedToCreateServiceAccount", "service account"),
                (scheme.ROLE, rbac.build_role(cluster), "CreatedRole", "FailedToCreateRole", "role"),
                (scheme.ROLE_BINDING, rbac.build_role_binding(cluster), "CreatedRoleBinding",
                 "FailedToCreateRoleBinding", "role binding")):
            oname = obj["metadata"]["name"]
            try:
                await self.client.get(kind, oname, ns)
                continue
            except Exception as e:
                if not is_not_found(e):
                    raise
            if kind is scheme.SERVICE_ACCOUNT and named and named == oname:
                msg = (f"If users specify ServiceAccountName for the head Pod, they need to create a ServiceAccount "
                       f"themselves. However, ServiceAccount {oname} is not found. Please create one. See the PR "
                       "description of https://github.com/ray-project/kuberay/pull/1128 for more details.")
                self.recorder.event(cluster, "Warning", "AutoscalerServiceAccountNotFound",
                                    f"Failed to reconcile RayCluster {ns}/{name}. {msg}")
                raise LookupError(msg)
            try:
                if not await create_unless_exists(self.client, obj):
                    continue
            except Exception as e:
                self.recorder.event(cluster, "Warning", failed, f"Failed creating {noun} {ns}/{oname}, {e}")
                raise
            self.recorder.event(cluster, "Normal", created, f"Created {noun} {ns}/{oname}")

    async def _remove_finalizer(self, cluster: Obj, fin: str) -> None:
        cluster["metadata"]["finalizers"] = [f for f in cluster["metadata"].get("finalizers") or [] if f != fin]
        await self.client.update(cluster)

    # --- reads -----------------------------------------------------------------------------

    async def _list_pods(self, ns: str, cluster: str) -> list[Obj]:
        pods = await self.reader.cluster_pods(ns, cluster)
        return sorted(pods, key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))

    async def _pod_exists(self, ns: str, name: str) -> bool:
        return await self.reader.pod_exists(ns, name)

    # --- head Ingress ---------------------------------------------------------------------------

    async def _reconcile_ingress(self, cluster: Obj) -> None:
        """With ``headGroupSpec.enableIngress: true``, create the head Ingress
        (:func:`~pumice.controllers.ray.common.ingress.build_ingress_for_head_service`, controller
        reference to the cluster, so it goes with it) or bring the one this cluster controls back to
        the desired labels, annotations and spec. An Ingress of that name the cluster does not
        control is left alone with a Warning ``FailedToCreateIngress``. Turning ``enableIngress``
        off deletes nothing, as upstream. Events ``CreatedIngress``, ``UpdatedIngress`` and their
        ``FailedTo…`` Warnings, with upstream's texts.

        Raises:
            the API error of a failed get, create or update.

        Mirrors: raycluster_controller.go reconcileIngress, reconcileIngressKubernetes,
        createHeadIngress (not the OpenShift Route: pumice is not OpenShift)."""
        head = (cluster.get("spec") or {}).get("headGroupSpec") or {}
        if not head.get("enableIngress"):
            return
        desired = ingressb.build_ingress_for_head_service(cluster)
        ns, name = desired["metadata"]["namespace"], desired["metadata"]["name"]
        existing = await get_or_none(self.client, scheme.INGRESS, name, ns)
        if existing is None:
            desired["metadata"]["ownerReferences"] = [m.owner_reference(cluster, default=scheme.RAY_CLUSTER)]
            try:
                await self.client.create(desired)
            except Exception as e:
                if is_already_exists(e):
                    log.info("RayCluster %s/%s: Ingress %s already exists, no need to create",
                             ns, cluster["metadata"]["name"], name)
                    return
                self.recorder.event(cluster, "Warning", "FailedToCreateIngress",
                                    f"Failed creating ingress {ns}/{name}, {e}")
                raise
            self.recorder.event(cluster, "Normal", "CreatedIngress", f"Created ingress {ns}/{name}")
            return
        ref = m.controller_of(existing)
        if ref is None or ref.get("uid") != cluster["metadata"].get("uid"):
            log.info("RayCluster %s/%s: skipping Ingress %s not owned by this RayCluster",
                     ns, cluster["metadata"]["name"], name)
            self.recorder.event(cluster, "Warning", "FailedToCreateIngress",
                                f"Ingress {ns}/{name} already exists and is not owned by this RayCluster; "
                                "not modifying it")
            return
        if not ingressb.ingress_needs_update(existing, desired):
            return
        existing.setdefault("apiVersion", scheme.INGRESS.api_version)
        existing.setdefault("kind", scheme.INGRESS.kind)
        try:
            await self.client.update(existing)
        except Exception as e:
            self.recorder.event(cluster, "Warning", "FailedToUpdateIngress",
                                f"Failed updating ingress {ns}/{name}, {e}")
            raise
        self.recorder.event(cluster, "Normal", "UpdatedIngress", f"Updated ingress {ns}/{name}")

    # --- token authentication ----------------------------------------------------------------

    async def _reconcile_auth_secret(self, cluster: Obj) -> None:
        """Create Secret ``<cluster>`` with a random ``auth_token`` (32 random bytes, base64) for a
        cluster with ``authOptions.mode: token``, unless Kubernetes token auth is on or the user
        names their own Secret (``authOptions.secretName``); an existing Secret is kept.

        Mirrors: raycluster_controller.go reconcileAuthSecret, createAuthSecret."""
        opts = (cluster.get("spec") or {}).get("authOptions") or {}
        if not podb.is_auth_enabled(cluster.get("spec") or {}) or podb.is_k8s_auth_enabled(opts) or \
                opts.get("secretName"):
            return
        ns = cluster["metadata"].get("namespace", "default")
        name = assoc.check_name(cluster["metadata"]["name"])
        if await get_or_none(self.client, scheme.SECRET, name, ns) is not None:
            return
        token = base64.b64encode(secrets.token_bytes(32)).decode()
        secret = {"apiVersion": "v1", "kind": "Secret",
                  "metadata": {"name": name, "namespace": ns,
                               "labels": {c.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"]},
                               "ownerReferences": [m.owner_reference(cluster, default=scheme.RAY_CLUSTER)]},
                  "stringData": {podb.RAY_AUTH_TOKEN_SECRET_KEY: token}}
        await create_unless_exists(self.client, secret)

    # --- services --------------------------------------------------------------------------

    async def _reconcile_head_service(self, cluster: Obj) -> None:
        ns = cluster["metadata"].get("namespace", "default")
        found = await self.reader.head_services(ns, cluster["metadata"]["name"])
        if len(found) == 1:
            return
        if len(found) > 1:
            raise RuntimeError(f"found {len(found)} head Services for RayCluster {ns}/{cluster['metadata']['name']}")
        svc = svcb.build_head_service(cluster, self.options.service)
        try:
            await self.client.create(svc)
        except Exception as e:
            if not is_already_exists(e):
                self.recorder.event(cluster, "Warning", "FailedToCreateService", f"Failed to create head Service: {e}")
                raise
            return
        self.recorder.event(cluster, "Normal", "CreatedService", f"Created service {ns}/{svc['metadata']['name']}")

    async def _reconcile_headless_service(self, cluster: Obj) -> None:
        if not svcb.needs_headless_service(cluster):
            return
        await create_unless_exists(self.client, svcb.build_headless_service(cluster))

    async def _reconcile_serve_service(self, cluster: Obj) -> None:
        """With the annotation ``ray.io/enable-serve-service: "true"``, create ``<cluster>-serve-svc``
        (:func:`~pumice.controllers.ray.common.service.build_serve_service_for_raycluster`) when
        missing; an existing one is never updated, as upstream.

        Raises:
            ValueError: the head declares no serving port (upstream's text); the API error of a
                failed get or create.

        Mirrors: raycluster_controller.go reconcileServeService."""
        if not svcb.wants_serve_service(cluster):
            return
        ns = cluster["metadata"].get("namespace", "default")
        name = assoc.serve_service_name(cluster["metadata"]["name"])
        if await get_or_none(self.client, scheme.SERVICE, name, ns) is not None:
            return
        await self.client.create(svcb.build_serve_service_for_raycluster(cluster))

    # --- pods ------------------------------------------------------------------------------

    async def _create_pod(self, cluster: Obj, pod: Obj, group_key: str, failure_reason: str, *,
                          head: bool = False) -> str:
        """Create the head (``head`` true, ``group_key`` HEAD_GROUP_KEY) or a worker Pod of group
        ``group_key``; events ``CreatedHeadPod`` / ``CreatedWorkerPod`` and their ``FailedToCreate…``
        Warnings with upstream's texts. ``head`` is its own flag: a worker group may be named ``""``
        too (the CRD allows it), and its Pods are still workers (trial 11 F-2). Expectations share
        the key then, as upstream's (HeadGroup is ``""`` there as well)."""
        ns = cluster["metadata"].get("namespace", "default")
        try:
            created = await self.client.create(pod)
        except Exception as e:
            if head:
                self.recorder.event(cluster, "Warning", "FailedToCreateHeadPod",
                                    f"Failed to create head Pod {ns}/{pod['metadata'].get('name', '')}, {e}")
            else:
                self.recorder.event(cluster, "Warning", "FailedToCreateWorkerPod",
                                    f"Failed to create worker Pod for the cluster {ns}/{cluster['metadata']['name']}, {e}")
            raise ReplicaFailureError(failure_reason, f"Failed to create Pod: {e}") from e
        name = str(created["metadata"]["name"])
        self.expectations.expect(ns, cluster["metadata"]["name"], group_key, name, "create", self.clock.now())
        if head:
            self.recorder.event(cluster, "Normal", "CreatedHeadPod", f"Created head Pod {ns}/{name}")
        else:
            self.recorder.event(cluster, "Normal", "CreatedWorkerPod", f"Created worker Pod {ns}/{name}")
        return name

    async def _delete_pod(self, cluster: Obj, name: str, group_key: str, failure_reason: str) -> bool:
        """Delete ``name`` (NotFound ignored). Returns True when a delete call was made."""
        ns = cluster["metadata"].get("namespace", "default")
        try:
            await self.client.delete(scheme.POD, name, ns)
        except Exception as e:
            if is_not_found(e):
                return False
            self.recorder.event(cluster, "Warning", "FailedToDeletePod", f"Failed to delete Pod {ns}/{name}: {e}")
            raise ReplicaFailureError(failure_reason, f"Failed to delete Pod {ns}/{name}: {e}") from e
        self.expectations.expect(ns, cluster["metadata"]["name"], group_key, name, "delete", self.clock.now())
        self.recorder.event(cluster, "Normal", "DeletedPod", f"Deleted Pod {ns}/{name}")
        return True

    def _with_default_metadata(self, pod: Obj) -> Obj:
        """Add the operator's default Pod annotations and labels where the Pod does not set the key.

        Mirrors: raycluster_controller.go buildHeadPod / buildWorkerPod (DefaultPodAnnotations,
        DefaultPodLabels)."""
        md = pod.setdefault("metadata", {})
        for key, defaults in (("annotations", self.options.default_pod_annotations),
                              ("labels", self.options.default_pod_labels)):
            if defaults:
                target = md.setdefault(key, {})
                for k, v in defaults.items():
                    target.setdefault(k, v)
        return pod

    async def _delete_all_pods(self, namespace: str, label_selector: str) -> list[Obj]:
        """Delete every Pod the selector matches that is not already being deleted (NotFound
        ignored). Returns the Pods listed, those already terminating included.

        Raises:
            ApiError: the list or a delete failed.

        Mirrors: raycluster_controller.go deleteAllPods."""
        pods = (await self.client.list(scheme.POD, namespace, label_selector=label_selector)).items
        for p in pods:
            if p["metadata"].get("deletionTimestamp"):
                continue
            try:
                await self.client.delete(scheme.POD, p["metadata"]["name"], namespace)
            except Exception as e:
                if not is_not_found(e):
                    raise
        return pods

    async def _reconcile_pods(self, cluster: Obj) -> None:
        name = cluster["metadata"]["name"]
        ns = cluster["metadata"].get("namespace", "default")
        status = cluster.get("status") or {}
        susp = suspend_status(status)
        if susp == c.RayClusterConditionType.RAY_CLUSTER_SUSPENDING:
            try:
                await self._delete_all_pods(ns, f"{c.RAY_CLUSTER_LABEL_KEY}={name}")
            except Exception as e:
                self.recorder.event(cluster, "Warning", "FailedToDeletePodCollection",
                                    f"Failed deleting Pods due to suspension for RayCluster {ns}/{name}, {e}")
                raise ReplicaFailureError(c.RayClusterConditionReason.FAILED_DELETE_ALL_PODS,
                                          f"Failed to delete all Pods: {e}") from e
            self.expectations.delete_cluster(ns, name)
            self.recorder.event(cluster, "Normal", "DeletedPod",
                                f"Deleted Pods for RayCluster {ns}/{name} due to suspension")
            return
        if susp == c.RayClusterConditionType.RAY_CLUSTER_SUSPENDED or cluster["spec"].get("suspend"):
            return

        if await self._should_recreate_pods_for_upgrade(cluster):
            log.info("RayCluster %s/%s: spec changed with the Recreate upgradeStrategy; deleting all Pods", ns, name)
            try:
                await self._delete_all_pods(ns, f"{c.RAY_CLUSTER_LABEL_KEY}={name}")
            except Exception as e:
                self.recorder.event(cluster, "Warning", "FailedToDeletePodCollection",
                                    f"Failed deleting Pods due to spec change with Recreate upgradeStrategy for "
                                    f"RayCluster {ns}/{name}, {e}")
                raise ReplicaFailureError(c.RayClusterConditionReason.FAILED_DELETE_ALL_PODS,
                                          f"Failed to delete all Pods: {e}") from e
            self.expectations.delete_cluster(ns, name)
            self.recorder.event(cluster, "Normal", "DeletedPod",
                                f"Deleted all Pods for RayCluster {ns}/{name} due to spec change with Recreate "
                                "upgradeStrategy")
            return

        await self.batch_scheduler.do_batch_scheduling_on_submission(cluster)

        now = self.clock.now()
        all_pods = await self._list_pods(ns, name)
        heads = [p for p in all_pods if (p["metadata"].get("labels") or {}).get(c.RAY_NODE_TYPE_LABEL_KEY) == "head"]
        if await self.expectations.is_satisfied(ns, name, HEAD_GROUP_KEY, now, self._pod_exists):
            if len(heads) == 1:
                delete, reason = should_delete_pod(heads[0])
                if delete:
                    await self._delete_pod(cluster, heads[0]["metadata"]["name"], HEAD_GROUP_KEY,
                                           c.RayClusterConditionReason.FAILED_DELETE_HEAD_POD)
                    raise ReplicaFailureError("", reason)
            elif not heads:
                ann = cluster["metadata"].get("annotations") or {}
                provisioned = m.is_condition_true(status, c.RayClusterConditionType.RAY_CLUSTER_PROVISIONED)
                if provisioned and ann.get(c.DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION_KEY) == "true":
                    log.info("RayCluster %s/%s: head Pod gone; not recreating (provisioned head restart disabled)",
                             ns, name)
                else:
                    head = self._with_default_metadata(podb.build_head_pod(cluster, self.options.pod))
                    ann = head["metadata"].setdefault("annotations", {})
                    ann[c.UPGRADE_STRATEGY_RECREATE_HASH_KEY] = hash_without_replicas_and_workers_to_delete(
                        with_raycluster_defaults(cluster["spec"]))
                    ann[c.KUBERAY_VERSION_KEY] = c.KUBERAY_VERSION
                    self.batch_scheduler.add_metadata_to_child_resource(cluster, head, c.HEAD_GROUP_NAME)
                    await self._create_pod(cluster, head, HEAD_GROUP_KEY,
                                           c.RayClusterConditionReason.FAILED_CREATE_HEAD_POD, head=True)
            else:
                raise RuntimeError(f"{len(heads)} head Pods found for RayCluster {ns}/{name}; delete the extra "
                                   f"head Pods")

        for group in cluster["spec"].get("workerGroupSpecs") or []:
            await self._reconcile_worker_group(cluster, group, all_pods, now)

    async def _should_recreate_pods_for_upgrade(self, cluster: Obj) -> bool:
        """With ``upgradeStrategy.type: Recreate``: whether the head Pod's
        ``ray.io/upgrade-strategy-recreate-hash`` differs from the spec's hash. A head Pod made by
        another KubeRay version gets the current hash and version instead (no recreation; a failed
        update is logged).

        Mirrors: raycluster_controller.go shouldRecreatePodsForUpgrade."""
        strategy = (cluster["spec"].get("upgradeStrategy") or {}).get("type")
        if strategy != RayClusterUpgradeType.RECREATE:
            return False
        ns, name = cluster["metadata"].get("namespace", "default"), cluster["metadata"]["name"]
        cluster_hash = hash_without_replicas_and_workers_to_delete(with_raycluster_defaults(cluster["spec"]))
        heads = [p for p in await self._list_pods(ns, name)
                 if (p["metadata"].get("labels") or {}).get(c.RAY_NODE_TYPE_LABEL_KEY) == "head"]
        if not heads:
            return False
        head = heads[0]
        ann = head["metadata"].get("annotations") or {}
        version = ann.get(c.KUBERAY_VERSION_KEY, "")
        if version and version != c.KUBERAY_VERSION:
            log.info("RayCluster %s/%s: KubeRay version changed; not recreating Pods", ns, name)
            head = {**copy.deepcopy(head), "apiVersion": "v1", "kind": "Pod"}  # list items lack them
            head["metadata"].setdefault("annotations", {}).update(
                {c.UPGRADE_STRATEGY_RECREATE_HASH_KEY: cluster_hash, c.KUBERAY_VERSION_KEY: c.KUBERAY_VERSION})
            try:
                await self.client.update(head)
            except Exception as e:
                log.error("RayCluster %s/%s: failed to update head Pod %s annotations after the KubeRay version "
                          "change: %s", ns, name, head["metadata"]["name"], e)
            return False
        actual = ann.get(c.UPGRADE_STRATEGY_RECREATE_HASH_KEY, "")
        return bool(actual) and actual != cluster_hash

    async def _reconcile_worker_group(self, cluster: Obj, group: Obj, all_pods: list[Obj], now: float) -> None:
        name = cluster["metadata"]["name"]
        ns = cluster["metadata"].get("namespace", "default")
        gname = group["groupName"]
        if not await self.expectations.is_satisfied(ns, name, gname, now, self._pod_exists):
            return
        desired = res.group_desired_replicas(group) * res.num_of_hosts(group)
        # the group's Pods by cluster and group label only (upstream RayClusterGroupPodsAssociationOptions)
        pods = [p for p in all_pods if (p["metadata"].get("labels") or {}).get(c.RAY_NODE_GROUP_LABEL_KEY) == gname]
        fail_del = c.RayClusterConditionReason.FAILED_DELETE_WORKER_POD
        fail_create = c.RayClusterConditionReason.FAILED_CREATE_WORKER_POD
        if res.is_group_suspended(group):
            for p in pods:
                if not p["metadata"].get("deletionTimestamp"):
                    await self._delete_pod(cluster, p["metadata"]["name"], gname, fail_del)
            return
        if res.num_of_hosts(group) > 1 and self.options.pod.multi_host_indexing:
            await self._reconcile_multi_host_group(cluster, group, pods, desired)
            return
        deleted_unhealthy = []
        for p in pods:
            delete, reason = should_delete_pod(p)
            if delete:
                await self._delete_pod(cluster, p["metadata"]["name"], gname, fail_del)
                deleted_unhealthy.append(reason)
        if deleted_unhealthy:
            raise ReplicaFailureError("", "; ".join(deleted_unhealthy))
        to_delete = list(((group.get("scaleStrategy") or {}).get("workersToDelete")) or [])
        deleted = set()
        for pname in to_delete:
            await self._delete_pod(cluster, pname, gname, fail_del)
            deleted.add(pname)
        remaining = [p for p in pods if p["metadata"]["name"] not in deleted]
        diff = desired - len(remaining)
        if diff > 0:
            used = {(p["metadata"].get("labels") or {}).get(c.RAY_WORKER_REPLICA_INDEX_KEY) for p in remaining}
            idx = 0
            for _ in range(diff):
                while str(idx) in used:
                    idx += 1
                used.add(str(idx))
                pod = self._with_default_metadata(podb.build_worker_pod(cluster, group, self.options.pod,
                                                                        replica_index=idx))
                self.batch_scheduler.add_metadata_to_child_resource(cluster, pod, gname)
                await self._create_pod(cluster, pod, gname, fail_create)
        elif diff < 0:
            if res.is_autoscaling_enabled(cluster["spec"]) and not self.options.enable_random_pod_delete:
                return
            for p in remaining[:-diff]:
                await self._delete_pod(cluster, p["metadata"]["name"], gname, fail_del)

    async def _reconcile_multi_host_group(self, cluster: Obj, group: Obj, pods: list[Obj], desired: int) -> None:
        """Replica-atomic scaling: replicas are created and deleted as units of numOfHosts Pods."""
        gname = group["groupName"]
        hosts = res.num_of_hosts(group)
        fail_del = c.RayClusterConditionReason.FAILED_DELETE_WORKER_POD
        replicas: dict[str, list[Obj]] = {}
        for p in pods:
            rname = (p["metadata"].get("labels") or {}).get(c.RAY_WORKER_REPLICA_NAME_KEY, "")
            replicas.setdefault(rname, []).append(p)
        to_delete = set(((group.get("scaleStrategy") or {}).get("workersToDelete")) or [])
        doomed: list[str] = []
        for rname, members in sorted(replicas.items()):
            if len(members) < hosts or any(should_delete_pod(p)[0] for p in members) or \
                    any(p["metadata"]["name"] in to_delete for p in members):
                doomed.append(rname)
        for rname in doomed:
            for p in replicas.pop(rname):
                await self._delete_pod(cluster, p["metadata"]["name"], gname, fail_del)
        if doomed:
            raise ReplicaFailureError("", f"deleted incomplete or unhealthy replicas {doomed} of group {gname}")
        want = desired // hosts
        have = sorted(replicas)
        if len(have) < want:
            used = {(m[0]["metadata"].get("labels") or {}).get(c.RAY_WORKER_REPLICA_INDEX_KEY) for m in
                    replicas.values()}
            idx = 0
            for _ in range(want - len(have)):
                while str(idx) in used:
                    idx += 1
                used.add(str(idx))
                rname = f"{gname}-{assoc.random_suffix(self.rng)}"
                for h in range(hosts):
                    pod = self._with_default_metadata(podb.build_worker_pod(
                        cluster, group, self.options.pod, replica_index=idx, replica_name=rname, host_index=h))
                    self.batch_scheduler.add_metadata_to_child_resource(cluster, pod, gname)
                    await self._create_pod(cluster, pod, gname, c.RayClusterConditionReason.FAILED_CREATE_WORKER_POD)
        elif len(have) > want and not res.is_autoscaling_enabled(cluster["spec"]):
            for rname in have[: len(have) - want]:
                for p in replicas[rname]:
                    await self._delete_pod(cluster, p["metadata"]["name"], gname, fail_del)

    # --- status ----------------------------------------------------------------------------

    async def _calculate_status(self, cluster: Obj, pods: list[Obj], err: Exception | None) -> Obj:
        old = cluster.get("status") or {}
        st = copy.deepcopy(old)
        now = rfc3339(self.clock.now())
        spec = cluster["spec"]
        if err is not None:
            reason = getattr(err, "reason", "")
            if reason:
                m.set_condition(st, {"type": c.RayClusterConditionType.RAY_CLUSTER_REPLICA_FAILURE, "status": "True",
                                    "reason": reason, "message": str(err)}, now)
        else:
            m.remove_condition(st, c.RayClusterConditionType.RAY_CLUSTER_REPLICA_FAILURE)
        st["observedGeneration"] = cluster["metadata"].get("generation", 0)
        workers = [p for p in pods if (p["metadata"].get("labels") or {}).get(c.RAY_NODE_TYPE_LABEL_KEY) == "worker"]
        st["readyWorkerReplicas"] = sum(1 for p in workers if _pod_running_and_ready(p))
        st["availableWorkerReplicas"] = sum(1 for p in workers if (p.get("status") or {}).get("phase") == "Running")
        st["desiredWorkerReplicas"] = res.desired_worker_pods(spec)
        st["minWorkerReplicas"] = res.min_worker_pods(spec)
        st["maxWorkerReplicas"] = res.max_worker_pods(spec)
        total, formats = res.desired_quantities(spec)
        st["desiredCPU"] = res.status_quantity(total, formats, "cpu")
        st["desiredMemory"] = res.status_quantity(total, formats, "memory")
        gpus = sorted(k for k in total if res.is_gpu_resource_key(k))  # sumGPUs: a zero Quantity plus each
        st["desiredGPU"] = res.status_quantity({"gpu": res.sum_gpus(total)},
                                               {"gpu": formats[gpus[0]]} if gpus else {}, "gpu")
        st["desiredTPU"] = res.status_quantity(total, formats, "google.com/tpu")
        if err is None and len(pods) == st["desiredWorkerReplicas"] + 1 and all_pods_running(pods):
            st["state"] = c.ClusterState.READY.value
            st.pop("reason", None)

        head = single_head_pod(cluster, pods)
        m.set_condition(st, head_pod_ready_condition(head), now)
        susp = suspend_status(old)
        if not m.is_condition_true(st, c.RayClusterConditionType.RAY_CLUSTER_PROVISIONED) and \
                susp != c.RayClusterConditionType.RAY_CLUSTER_SUSPENDED:
            if all_pods_running(pods):
                m.set_condition(st, {"type": c.RayClusterConditionType.RAY_CLUSTER_PROVISIONED, "status": "True",
                                    "reason": c.RayClusterConditionReason.ALL_POD_RUNNING_AND_READY_FIRST_TIME,
                                    "message": "All Ray Pods are ready for the first time"}, now)
            else:
                m.set_condition(st, {"type": c.RayClusterConditionType.RAY_CLUSTER_PROVISIONED, "status": "False",
                                    "reason": c.RayClusterConditionReason.RAY_CLUSTER_PODS_PROVISIONING,
                                    "message": "RayCluster Pods are being provisioned for first time"}, now)
        suspending = c.RayClusterConditionType.RAY_CLUSTER_SUSPENDING
        suspended = c.RayClusterConditionType.RAY_CLUSTER_SUSPENDED
        if susp == suspending:
            if not pods:
                m.set_condition(st, {"type": c.RayClusterConditionType.RAY_CLUSTER_PROVISIONED, "status": "False",
                                    "reason": c.RayClusterConditionReason.RAY_CLUSTER_PODS_PROVISIONING,
                                    "message": "RayCluster has been suspended"}, now)
                m.set_condition(st, {"type": suspending, "status": "False", "reason": suspending, "message": ""}, now)
                m.set_condition(st, {"type": suspended, "status": "True", "reason": suspended, "message": ""}, now)
        elif susp == suspended:
            if not spec.get("suspend"):
                m.set_condition(st, {"type": suspended, "status": "False", "reason": suspended, "message": ""}, now)
        else:
            m.set_condition(st, {"type": suspended, "status": "False", "reason": suspended, "message": ""}, now)
            m.set_condition(st, {"type": suspending, "status": "True" if spec.get("suspend") else "False",
                                "reason": suspending, "message": ""}, now)
        if spec.get("suspend") and not pods:
            st["state"] = c.ClusterState.SUSPENDED.value

        await self._update_endpoints_and_head(cluster, st, head)
        st["lastUpdateTime"] = now
        if old.get("state") != st.get("state") and st.get("state"):
            st.setdefault("stateTransitionTimes", {})[st["state"]] = now
        return st

    async def _update_endpoints_and_head(self, cluster: Obj, st: Obj, head: Obj | None) -> None:
        ns = cluster["metadata"].get("namespace", "default")
        svcs = await self.reader.head_services(ns, cluster["metadata"]["name"])
        if svcs:
            st["endpoints"] = service_endpoints(svcs[0], st.get("endpoints") or {})
        ip, svc_name = head_service_ip_and_name(cluster, svcs, head)
        info = {"podIP": (head.get("status") or {}).get("podIP", "") if head is not None else "",
                "podName": head["metadata"]["name"] if head is not None else "",
                "serviceIP": ip, "serviceName": svc_name}
        st["head"] = {k: v for k, v in info.items() if v}


def service_endpoints(svc: Obj, endpoints: Obj) -> Obj:
    """``status.endpoints`` from the head Service's named ports: the nodePort when set, else the
    targetPort (number or name); a port without a name or a targetPort is left out.

    Mirrors: raycluster_controller.go updateEndpoints."""
    eps = dict(endpoints)
    for port in (svc.get("spec") or {}).get("ports") or []:
        if not port.get("name"):
            continue
        if port.get("nodePort"):
            eps[port["name"]] = str(port["nodePort"])
        elif port.get("targetPort") not in (None, 0, ""):
            eps[port["name"]] = str(port["targetPort"])
    return eps


def single_head_pod(cluster: Obj, pods: Sequence[Obj]) -> Obj | None:
    """The cluster's head Pod among ``pods``, None without one.

    Raises:
        RuntimeError: more than one head Pod (upstream GetRayClusterHeadPod).
    """
    heads = [p for p in pods if (p["metadata"].get("labels") or {}).get(c.RAY_NODE_TYPE_LABEL_KEY) == "head"]
    if len(heads) > 1:
        raise RuntimeError(f"found {len(heads)} head Pods for RayCluster {cluster['metadata'].get('namespace')}/"
                           f"{cluster['metadata']['name']}: {[p['metadata']['name'] for p in heads]}")
    return heads[0] if heads else None


def head_service_ip_and_name(cluster: Obj, services: Sequence[Obj], head: Obj | None) -> tuple[str, str]:
    """``(serviceIP, serviceName)`` of the head Service: its clusterIP, or the head Pod's IP
    (``""`` without a head Pod) for a headless one.

    Raises:
        LookupError: no head Service (yet: the informer may not have seen the one just created).
        RuntimeError: more than one head Service. (Upstream's errors; the status is then not
            written this pass.)

    Mirrors: raycluster_controller.go getHeadServiceIPAndName.

    Deviates: a Service without a clusterIP counts as headless (upstream: the error "head
    service IP is empty"): a Service stored before pumice's API server allocated cluster IPs
    (session 12) still has none."""
    name = cluster["metadata"]["name"]
    if not services:
        raise LookupError(f"unable to find head service. cluster name {name}")
    if len(services) > 1:
        raise RuntimeError(f"found multiple head services. cluster name {name}")
    svc = services[0]
    cluster_ip = (svc.get("spec") or {}).get("clusterIP") or ""
    if cluster_ip in ("", "None"):
        return ((head.get("status") or {}).get("podIP", "") if head is not None else ""), svc["metadata"]["name"]
    return cluster_ip, svc["metadata"]["name"]
