"""QueueInfo and ClusterInfo.

Mirrors: volcano pkg/scheduler/api/queue_info.go QueueInfo, cluster_info.go ClusterInfo.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pumice.api import Obj
from pumice.api.volcano.constants import (
    KUBE_HIERARCHY_ANNOTATION_KEY,
    KUBE_HIERARCHY_WEIGHT_ANNOTATION_KEY,
    QueueState,
)
from pumice.scheduler.volcano.api.job_info import JobInfo, JobMemo
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.api.running_sum import Changes, JobTable, RunningSums, RunningTally

if TYPE_CHECKING:
    from collections.abc import Callable

    from pumice.scheduler.default.volumebinding import VolumeListers
    from pumice.scheduler.volcano.api.hyper_node_info import HyperNodesInfo
    from pumice.scheduler.volcano.framework.node_arrays import NodeArrays



@dataclass(eq=False, frozen=True)
class QueueInfo:
    """A Queue. ``uid`` = name (as upstream). ``capability``/``deserved``/``guarantee`` are None
    when the spec omits them. ``creation`` epoch seconds.

    Frozen: the live cache hands the same QueueInfo to every session while its Queue object
    does not change (its Resources are immutable, and ``queue``, the wire object, is never
    edited by a session)."""

    uid: str
    name: str
    weight: int = 1
    priority: int = 0
    reclaimable: bool = True
    state: str = str(QueueState.OPEN)
    parent: str = ""
    capability: Resource | None = None
    deserved: Resource | None = None
    guarantee: Resource | None = None
    hierarchy: str = ""
    weights: str = ""
    creation: float = 0.0
    queue: Obj = field(default_factory=dict)

    @classmethod
    def from_queue(cls, q: Obj, creation: float = 0.0) -> QueueInfo:
        md = q.get("metadata") or {}
        spec = q.get("spec") or {}
        st = q.get("status") or {}
        ann = md.get("annotations") or {}
        cap = spec.get("capability")
        des = spec.get("deserved")
        gua = (spec.get("guarantee") or {}).get("resource")
        rec = spec.get("reclaimable")
        name = md.get("name", "")
        return cls(
            uid=name,
            name=name,
            weight=int(spec.get("weight") or 1),
            priority=int(spec.get("priority") or 0),
            reclaimable=True if rec is None else bool(rec),
            state=st.get("state") or str(QueueState.OPEN),
            parent=spec.get("parent") or "",
            capability=Resource.from_list(cap) if cap else None,
            deserved=Resource.from_list(des) if des else None,
            guarantee=Resource.from_list(gua) if gua else None,
            hierarchy=ann.get(KUBE_HIERARCHY_ANNOTATION_KEY, ""),
            weights=ann.get(KUBE_HIERARCHY_WEIGHT_ANNOTATION_KEY, ""),
            creation=creation,
            queue=q,
        )

    def is_open(self) -> bool:
        return self.state == str(QueueState.OPEN)


@dataclass(eq=False)
class ClusterInfo:
    """A snapshot: ordered jobs, nodes (Ready only), queues, priority class values, namespaces.

    The snapshot is owned by one session; build a fresh one per session.

    Optional hints from the live cache's incremental snapshot (None from the full build):
    ``total_allocatable`` is the Nodes' summed allocatable, in node order; ``node_arrays`` the
    previous session's :class:`NodeArrays`, which the session may bring up to date instead of
    building its own (see :meth:`NodeArrays.reuse`), and ``on_node_arrays`` receives the arrays
    the session ends up with. ``node_memo`` is a dict that outlives the session while every Node
    (membership, order and object) stays the same, for results that depend only on the Nodes
    and the Pod spec (:attr:`Session.node_memo`).
    """

    jobs: dict[str, JobInfo] = field(default_factory=dict)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    priority_classes: dict[str, int] = field(default_factory=dict)
    namespaces: dict[str, Obj] = field(default_factory=dict)
    now: float = 0.0
    hypernodes: HyperNodesInfo | None = None
    nodes_in_shard: set[str] | None = None
    """Soft sharding: the Nodes of this scheduler's NodeShard, preferred over the others
    (upstream ``Session.NodesInShard``); None: no preference."""
    total_allocatable: Resource | None = None
    node_arrays: NodeArrays | None = None
    on_node_arrays: Callable[[NodeArrays], None] | None = None
    node_memo: dict[Any, Any] | None = None
    pod_group_status: dict[str, Obj] | None = None
    """Job uid -> its PodGroup status as handed out, an object no session changes (the live
    cache's base job's; the job itself carries a copy); None: the session copies it."""
    volumes: VolumeListers | None = None
    """Claims, volumes and StorageClasses as the cache's informers hold them (the ``predicates``
    plugin's VolumeBinding reads them); None: not known (a snapshot built from objects), and
    VolumeBinding lets every Pod through."""
    pod_affinity_nodes: frozenset[str] | None = None
    """The Nodes with a task whose Pod has podAffinity or podAntiAffinity (None: not known, look
    at every Node)."""
    handed_out: dict[str, tuple[JobInfo, JobInfo, dict[str, Any]]] | None = None
    """Job uid -> (base job, the job in :attr:`jobs`, its fields as handed out) for the jobs the
    live cache may hand to the next session again when this one leaves them untouched
    (:func:`pumice.scheduler.volcano.api.job_info.untouched`); None from the full build."""
    close_quiet: dict[str, int] | None = None
    """Job uid -> the job version whose close, untouched, emitted nothing (status as written,
    no Event, no Pod condition); kept by the live cache across sessions, see
    :meth:`Session.close`. None: every job's status is computed at close."""
    job_memo: JobMemo | None = None
    """Results plugins compute from the jobs as handed out, kept while the jobs' versions stay
    the same (:class:`JobMemo`); None: compute every session."""
    changes: Changes | None = None
    """What changed since the live cache's previous snapshot (:class:`Changes`); None: not known
    (the full build)."""
    on_touched: Callable[[set[str]], None] | None = None
    """Receives, when the session closes, the uids of the :attr:`handed_out` jobs it touched
    (the live cache then hands the others to the next session without looking again)."""
    node_list: list[NodeInfo] | None = None
    """The values of :attr:`nodes` in node order (read-only); None: the session lists them."""
    active_jobs: set[str] | None = None
    """The uids of the jobs that were :func:`~pumice.scheduler.volcano.cache.incremental.may_act`
    as handed out (read-only); None: not known (every job may)."""
    job_log: set[str] | None = None
    """Where the session's jobs log their uid when their tasks or phase change
    (:attr:`JobInfo.touch_log`); None: no log (with :attr:`active_jobs` None)."""
    job_writes: set[str] | None = None
    """Where the :attr:`handed_out` jobs log their uid when a field is set or a fit error
    recorded (:class:`~pumice.scheduler.volcano.api.job_info.WriteLoggedJob`), empty when
    handed out; None: no log (compare each job's fields)."""
    running_sums: dict[str, RunningSums | RunningTally | JobTable | dict[str, Any]] | None = None
    """Running sums by purpose, kept by the live cache across sessions and brought up to date by
    the sessions from :attr:`changes` (:meth:`Session.job_sums`), per-job tables
    (:meth:`Session.job_table`) and what a session derives from running sums (a dict keyed by
    group, e.g. :meth:`Session.close`'s ResourceLists); None: fold afresh."""
