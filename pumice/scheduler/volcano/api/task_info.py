"""TaskInfo: one Pod as the scheduler sees it.

Mirrors: volcano pkg/scheduler/api/job_info.go TaskInfo, NewTaskInfo, getTaskStatus and
pod_info.go GetPodResourceRequest.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from pumice._util.clock import parse_rfc3339
from pumice.api import Obj
from pumice.api.volcano.constants import (
    KUBE_GROUP_NAME_ANNOTATION_KEY,
    POD_PREEMPTABLE,
    TASK_PRIORITY_ANNOTATION_KEY,
    TASK_SPEC_KEY,
)
from pumice.scheduler.default.resources import pod_nonzero_requests
from pumice.scheduler.default.volumebinding import has_claim_volumes
from pumice.scheduler.volcano.api.resource import PODS, Resource
from pumice.scheduler.volcano.api.types import TaskStatus

_POD_ONE = Resource(scalars={PODS: 1.0})


def pod_request(pod: Obj) -> Resource:
    """The launch request of a Pod: max(sum of regular containers (+ sidecars), largest init
    container) per dimension, plus ``overhead``, plus ``pods: 1``.

    Raises:
        QuantityError: a request is not a quantity.
    """
    spec = pod.get("spec") or {}
    total = Resource()
    for c in spec.get("containers") or []:
        total = total + Resource.from_list((c.get("resources") or {}).get("requests"))
    sidecars = Resource()
    init_max = Resource()
    for c in spec.get("initContainers") or []:
        req = Resource.from_list((c.get("resources") or {}).get("requests"))
        if c.get("restartPolicy") == "Always":
            sidecars = sidecars + req
            total = total + req
        else:
            init_max = init_max.max_with(sidecars + req)
    total = total.max_with(init_max)
    if spec.get("overhead"):
        total = total + Resource.from_list(spec["overhead"])
    return total + _POD_ONE


def task_status_of(pod: Obj) -> TaskStatus:
    """Map a Pod's phase / nodeName / deletionTimestamp to a TaskStatus (table in the spec §1.2)."""
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    node = (pod.get("spec") or {}).get("nodeName")
    if phase == "Running":
        return TaskStatus.Releasing if deleting else TaskStatus.Running
    if phase == "Pending":
        if deleting:
            return TaskStatus.Releasing
        return TaskStatus.Bound if node else TaskStatus.Pending
    if phase == "Succeeded":
        return TaskStatus.Succeeded
    if phase == "Failed":
        return TaskStatus.Failed
    return TaskStatus.Unknown


def job_id_of(pod: Obj) -> str:
    """``<ns>/<group>`` from the ``scheduling.k8s.io/group-name`` annotation, else ``""``."""
    md = pod.get("metadata") or {}
    group = (md.get("annotations") or {}).get(KUBE_GROUP_NAME_ANNOTATION_KEY)
    return f"{md.get('namespace') or 'default'}/{group}" if group else ""


def _bool_key(md: Obj, key: str, default: bool) -> bool:
    for src in (md.get("annotations") or {}, md.get("labels") or {}):
        if key in src:
            v = str(src[key]).strip().lower()
            if v in ("true", "1", "t"):
                return True
            if v in ("false", "0", "f"):
                return False
    return default


@dataclass(frozen=True)
class TransactionContext:
    """Where and how the last statement left a task (node, status, eviction flag)."""

    node_name: str = ""
    status: TaskStatus = TaskStatus.Pending
    eviction_occurred: bool = False


@dataclass(eq=False)
class TaskInfo:
    """A task. Mutable only through the session/statement (status, node_name).

    Fields: ``resreq`` is the launch request (init containers included) with ``pods: 1``;
    ``priority`` an int32; ``creation`` seconds since the epoch.
    """

    uid: str
    name: str
    namespace: str
    job: str
    role: str
    resreq: Resource
    status: TaskStatus
    priority: int = 1
    preemptable: bool = True
    node_name: str = ""
    creation: float = 0.0
    pod: Obj = field(default_factory=dict)
    sch_gated: bool = False
    preemption_policy: str = ""
    nominated_node_name: str = ""
    eviction_occurred: bool = False
    last_transaction: TransactionContext | None = None
    job_allocated_hypernode: str = ""
    pod_annotations: dict[str, str] = field(default_factory=dict)
    """Annotations the scheduler gives the Pod with its Binding (a device plugin's choice, e.g.
    ``volcano.sh/gpu-index``); replaced, never changed in place, as clones share it
    (upstream TaskInfo.PodAnnotations / MergePodAnnotations)."""

    @property
    def init_resreq(self) -> Resource:
        return self.resreq

    @functools.cached_property
    def best_effort(self) -> bool:
        return self.resreq.is_empty()

    @functools.cached_property
    def nonzero_request(self) -> tuple[float, float]:
        """``(millicores, bytes)`` as the Kubernetes node view counts this Pod for scoring: a
        container without a cpu/memory request counts 100m / 200Mi.

        Mirrors: kubernetes pkg/scheduler/util GetNonzeroRequests (NonMissingContainerRequests).
        """
        cpu, mem = pod_nonzero_requests(self.pod)
        return float(cpu), float(mem)

    @functools.cached_property
    def has_claim_volumes(self) -> bool:
        """The Pod has ``persistentVolumeClaim`` or ``ephemeral`` volumes (VolumeBinding checks
        only these), decided once per task."""
        return has_claim_volumes(self.pod)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_pod(cls, pod: Obj) -> TaskInfo:
        """Build from a wire Pod. Raises QuantityError on a bad request quantity."""
        md = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        ann = md.get("annotations") or {}
        labels = md.get("labels") or {}
        prio = spec.get("priority")
        priority = int(prio) if prio is not None else 1
        if TASK_PRIORITY_ANNOTATION_KEY in ann:
            try:
                priority = int(ann[TASK_PRIORITY_ANNOTATION_KEY])
            except ValueError:
                pass
        ts = md.get("creationTimestamp")
        ns = md.get("namespace") or "default"
        return cls(
            uid=md.get("uid") or f"{ns}-{md.get('name')}",
            name=md.get("name", ""),
            namespace=ns,
            job=job_id_of(pod),
            role=ann.get(TASK_SPEC_KEY) or labels.get(TASK_SPEC_KEY) or "",
            resreq=pod_request(pod),
            status=task_status_of(pod),
            priority=priority,
            preemptable=_bool_key(md, POD_PREEMPTABLE, True),
            node_name=spec.get("nodeName") or "",
            creation=parse_rfc3339(ts) if isinstance(ts, str) and ts else 0.0,
            pod=pod,
            sch_gated=bool(spec.get("schedulingGates")),
            preemption_policy=spec.get("preemptionPolicy") or "",
            nominated_node_name=(pod.get("status") or {}).get("nominatedNodeName") or "",
        )

    def clone(self) -> TaskInfo:
        """A shallow copy (``pod`` and ``resreq`` are shared; both are never mutated)."""
        c = object.__new__(TaskInfo)
        c.__dict__.update(self.__dict__)
        return c

    def transaction_context(self) -> TransactionContext:
        return TransactionContext(self.node_name, self.status, self.eviction_occurred)


def has_pod_affinity(task: TaskInfo) -> bool:
    """The Pod has podAffinity or podAntiAffinity (kube's PodsWithAffinity)."""
    aff = (task.pod.get("spec") or {}).get("affinity") or {}
    return bool(aff.get("podAffinity") or aff.get("podAntiAffinity"))
